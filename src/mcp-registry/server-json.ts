import { z } from 'zod';

// The parts of the MCP Registry's `server.json` (and its API answers) that
// installing a server needs; see the registry's docs/reference/api/openapi.yaml.
// Loose objects: the format grows, and fields this client ignores are kept as they are.

/** A value the user may be asked for (`Input` of the schema). */
export const RegistryInput = z.looseObject({
  description: z.string().optional(),
  isRequired: z.boolean().optional(),
  isSecret: z.boolean().optional(),
  format: z.string().optional(),
  /** A fixed value (not for the user to change); `{name}` refers to `variables`. */
  value: z.string().optional(),
  default: z.string().optional(),
  placeholder: z.string().optional(),
  choices: z.array(z.string()).optional(),
});
export type RegistryInput = z.infer<typeof RegistryInput>;

const Variables = z.record(z.string(), RegistryInput);

/** An input whose `value` may refer to `{variables}`. */
const WithVariables = { ...RegistryInput.shape, variables: Variables.optional() };

/** An environment variable or an HTTP header (`KeyValueInput`). */
export const KeyValueInput = z.looseObject({ ...WithVariables, name: z.string().min(1) });
export type KeyValueInput = z.infer<typeof KeyValueInput>;

/** A command-line argument: `positional` (identified by `valueHint`) or `named` (`--flag value`). */
export const RegistryArgument = z.looseObject({
  ...WithVariables,
  type: z.enum(['positional', 'named']),
  name: z.string().optional(),
  valueHint: z.string().optional(),
  isRepeated: z.boolean().optional(),
});
export type RegistryArgument = z.infer<typeof RegistryArgument>;

/** A remote endpoint, or the transport of a package. */
export const RegistryTransport = z.looseObject({
  type: z.string(),
  url: z.string().optional(),
  headers: z.array(KeyValueInput).optional(),
  variables: Variables.optional(),
});
export type RegistryTransport = z.infer<typeof RegistryTransport>;

export const RegistryPackage = z.looseObject({
  /** `npm`, `pypi`, `oci`, `nuget`, `mcpb`, … */
  registryType: z.string(),
  identifier: z.string().min(1),
  version: z.string().optional(),
  runtimeHint: z.string().optional(),
  transport: RegistryTransport.optional(),
  runtimeArguments: z.array(RegistryArgument).optional(),
  packageArguments: z.array(RegistryArgument).optional(),
  environmentVariables: z.array(KeyValueInput).optional(),
});
export type RegistryPackage = z.infer<typeof RegistryPackage>;

/** One server version (`ServerDetail`). */
export const RegistryServer = z.looseObject({
  name: z.string().min(1),
  description: z.string().default(''),
  title: z.string().optional(),
  version: z.string().default(''),
  websiteUrl: z.string().optional(),
  packages: z.array(RegistryPackage).default([]),
  remotes: z.array(RegistryTransport).default([]),
});
export type RegistryServer = z.infer<typeof RegistryServer>;

/** `ServerResponse`: the entry and the registry's own metadata. */
export const RegistryServerResponse = z.looseObject({
  server: RegistryServer,
  _meta: z.record(z.string(), z.unknown()).optional(),
});
export type RegistryServerResponse = z.infer<typeof RegistryServerResponse>;

/** `ServerList`: one page of entries and the cursor of the next. */
export const RegistryServerList = z.looseObject({
  servers: z.array(RegistryServerResponse),
  metadata: z
    .looseObject({ nextCursor: z.string().nullable().optional(), count: z.number().optional() })
    .optional(),
});
export type RegistryServerList = z.infer<typeof RegistryServerList>;
