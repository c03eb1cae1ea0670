import type { Router } from 'express';
import { loadExpress } from '../express.js';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import { ServerName } from '../../config/schema.js';
import { RegistryClient } from '../../mcp-registry/registry-client.js';
import { toServerConfig } from '../../mcp-registry/convert.js';
import { MissingInputsError, RegistryError } from '../../mcp-registry/registry-errors.js';
import { installInputs, type InstallInput } from '../../mcp-registry/inputs.js';
import { chooseOption, installOptions } from '../../mcp-registry/options.js';
import type { RegistryServer } from '../../mcp-registry/index.js';
import { HttpError } from '../errors.js';
import { secretValuesOf } from '../../config/masking.js';

export interface RegistryRoutesOptions {
  /** Base URL of the MCP Registry; default `$MCP_FLEET_REGISTRY_URL`, else the official one. */
  registryUrl?: string;
  /** Told the secret values of an install before the host sees them (so logs redact them at once). */
  onSecrets?: (values: string[]) => void;
}

/** An entry as the page shows it: what it is, and each way to run it with the inputs it asks for. */
export interface RegistryEntryView {
  name: string;
  title: string | null;
  version: string;
  description: string;
  website_url: string | null;
  options: Array<{ id: string; type: string; label: string; problem: string | null; inputs: InstallInput[] }>;
}

const StringMap = z.record(z.string(), z.string()).optional();

/** `POST /install`: which entry, how to run it, under which name, with which values. */
const InstallRequest = z.strictObject({
  name: ServerName,
  /** The registry entry's name (`io.github.owner/server`). */
  server: z.string().min(1),
  version: z.string().min(1).default('latest'),
  /** An option id or type (`remote`, `npm`, …); default: the first runnable in the order remote, npm, pypi, oci. */
  package: z.string().min(1).optional(),
  values: z.strictObject({ env: StringMap, header: StringMap, arg: StringMap, variable: StringMap }).default({}),
  enabled: z.boolean().optional(),
});

/**
 * `GET /servers?q=&cursor=&limit=`: the registry's latest entries, proxied so
 * the page needs no CORS; `POST /install`: the entry converted server-side and
 * added like `POST /api/mcp/servers` (201 and the ServerView).
 */
export function registryRoutes(host: McpHost, options: RegistryRoutesOptions = {}): Router {
  const router = loadExpress().Router();
  const client = () => new RegistryClient({ baseUrl: options.registryUrl });

  router.get('/servers', async function searchRegistry(req, res) {
    const q = typeof req.query.q === 'string' ? req.query.q : '';
    const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
    const limit = searchLimit(req.query.limit);
    const page = await answerOf(() => client().search(q, { limit, cursor }));
    res.json({ servers: page.servers.map(entryView), next_cursor: page.nextCursor ?? null });
  });

  router.post('/install', async function installFromRegistry(req, res) {
    const body = InstallRequest.parse(req.body ?? {});
    const server = await answerOf(() => client().server(body.server, body.version));
    const config = await answerOf(async () => toServerConfig(chooseOption(server, body.package), body.values));
    const full = { ...config, ...(body.enabled === false && { enabled: false }) };
    options.onSecrets?.(secretValuesOf(full));
    const view = await host.addServer(body.name, full);
    res.status(201).location(`/api/mcp/servers/${body.name}`).json(view);
  });

  return router;
}

/** Largest page the registry serves. */
const MAX_LIMIT = 100;
const SearchLimit = z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(1).max(MAX_LIMIT));

/** `?limit=`: optional (20), else an integer from 1 to 100, as the tool search's; a repeated one counts by its first value. */
function searchLimit(value: unknown): number {
  const first = Array.isArray(value) ? value[0] : value;
  if (first === undefined) return 20;
  const parsed = SearchLimit.safeParse(first);
  if (!parsed.success) throw new HttpError(400, 'invalid_request', `limit: must be an integer from 1 to ${MAX_LIMIT}`, 'limit');
  return parsed.data;
}

function entryView(server: RegistryServer): RegistryEntryView {
  return {
    name: server.name,
    title: server.title ?? null,
    version: server.version,
    description: server.description,
    website_url: server.websiteUrl ?? null,
    options: installOptions(server).map((option) => ({
      id: option.id,
      type: option.type,
      label: option.label,
      problem: option.problem ?? null,
      inputs: installInputs(option),
    })),
  };
}

/** Registry errors as HTTP answers: the registry's own failures are a 502, the entry's problems a 4xx. */
async function answerOf<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof MissingInputsError) {
      const first = err.missing[0];
      throw new HttpError(400, 'missing_input', err.message, first ? `values.${first.kind}.${first.name}` : undefined);
    }
    if (!(err instanceof RegistryError)) throw err;
    switch (err.kind) {
      case 'not_found':
        throw new HttpError(404, 'not_found', err.message);
      case 'unsupported':
        throw new HttpError(422, 'unsupported', err.message);
      case 'invalid_request':
        // A value given that is wrong is named by its field, as a missing one is.
        throw new HttpError(400, 'invalid_request', err.message, err.input ? `values.${err.input.kind}.${err.input.name}` : undefined);
      default:
        throw new HttpError(502, 'registry_unavailable', err.message);
    }
  }
}
