// A valid value, other than the default, for every field of a server config,
// and a walk over the config schemas that asks for one per field: a field
// added to schema.ts makes the tests that use this fail until it has a sample,
// so every new field is proven to go through POST, PATCH and a type change.
import { z } from 'zod';
import { LocalServerConfig, RemoteServerConfig } from '../../src/config/schema.js';

/** Keyed by dotted path; fields of an `auth` kind are `auth.<field>`. */
export const FIELD_SAMPLES: Readonly<Record<string, unknown>> = {
  command: ['node', 'sample.js'],
  env: { SAMPLE_ENV: 'sample-env-value' },
  cwd: '/tmp',
  inherit_env: ['HOME'],
  url: 'https://sample.invalid/mcp',
  transport: 'sse',
  headers: { 'X-Sample': 'sample-header-value' },
  'auth.token': 'sample-token-value',
  'auth.client_id': 'sample-client',
  'auth.client_secret': 'sample-client-secret',
  'auth.scopes': ['read', 'write'],
  'auth.callback_port': 7777,
  'auth.client_metadata_url': 'https://client.invalid/metadata.json',
  'auth.dpop': true,
  // client_credentials takes exactly one of client_secret and private_key; the secret's sample is the one set.
  'auth.private_key': null,
  'auth.algorithm': 'ES256',
  'auth.issuer': 'https://issuer.invalid/',
  'auth.assertion_file': '/var/run/secrets/tokens/mcp',
  'auth.idp_token_endpoint': 'https://idp.invalid/token',
  'auth.idp_client_id': 'sample-idp-client',
  'auth.idp_client_secret': 'sample-idp-client-secret',
  'auth.id_token_file': '/var/run/secrets/id-token',
  enabled: false,
  timeout_seconds: 7,
  call_timeout_seconds: 9,
  max_concurrent_calls: 3,
  max_result_bytes: 4096,
  large_results: 'truncate',
  results_ttl_seconds: 60,
  results_max_bytes: 2 * 1024 * 1024,
  'tools.include': ['kept'],
  'tools.exclude': ['hidden'],
  'tools.always_load': ['kept'],
  'tools.approval': { echo: 'ask', '*': 'deny' },
  'tools.access': { echo: { users: ['alice'], groups: ['ops'] } },
  'access.users': ['alice'],
  'access.groups': ['eng'],
  approval_from_annotations: true,
  approval_timeout_seconds: 30,
  start: 'on_demand',
  idle_timeout_seconds: 42,
  scope: 'per_user',
  user_inputs: { SAMPLE_INPUT: { description: 'a sample input', secret: false } },
  max_sessions: 5,
  'reconnect.max_attempts': 2,
  'reconnect.initial_delay_seconds': 2,
  'reconnect.max_delay_seconds': 40,
  ping_interval_seconds: 0,
  max_total_timeout_seconds: 300,
  log_level: 'warning',
  protocol: '2025',
  catalog_max_age_seconds: 120,
};

export type ServerType = 'local' | 'remote';
export const CONFIG_SCHEMAS = { local: LocalServerConfig, remote: RemoteServerConfig } as const;

/** One field (or one `auth` kind, whose fields go together) as a patch carrying its sample. */
export interface FieldCase {
  type: ServerType;
  /** `max_result_bytes`, `tools.include`, `auth(bearer)`… */
  label: string;
  patch: Record<string, unknown>;
}

export function sample(path: string): unknown {
  if (!Object.hasOwn(FIELD_SAMPLES, path)) throw new Error(`no sample for the config field "${path}": add one to FIELD_SAMPLES`);
  return structuredClone(FIELD_SAMPLES[path]);
}

/** Every field of both server types, walked from the schemas: objects field by field, unions kind by kind. */
export function fieldCases(): FieldCase[] {
  const cases: FieldCase[] = [];
  for (const type of ['local', 'remote'] as const) {
    for (const [key, field] of Object.entries(CONFIG_SCHEMAS[type].shape)) {
      const inner = unwrap(field as z.ZodType);
      if (inner instanceof z.ZodObject) {
        for (const sub of Object.keys(inner.shape)) {
          cases.push({ type, label: `${key}.${sub}`, patch: { [key]: { [sub]: sample(`${key}.${sub}`) } } });
        }
      } else if (inner instanceof z.ZodUnion && inner.options.every((option) => option instanceof z.ZodObject)) {
        for (const option of inner.options as z.ZodObject[]) {
          // The discriminator (`kind`) is the option's literal; its other fields take their samples.
          const value: Record<string, unknown> = {};
          const kinds: unknown[] = [];
          for (const [sub, subField] of Object.entries(option.shape)) {
            if (subField instanceof z.ZodLiteral) kinds.push((value[sub] = subField.value));
            else value[sub] = sample(`${key}.${sub}`);
          }
          cases.push({ type, label: `${key}(${kinds.join(',')})`, patch: { [key]: value } });
        }
      } else {
        cases.push({ type, label: key, patch: { [key]: key === 'type' ? type : sample(key) } });
      }
    }
  }
  return cases;
}

/** The value of `key` built from its samples: the sample itself, or an object of its fields' samples. */
export function sampleValue(key: string, field: z.ZodType): unknown {
  const inner = unwrap(field);
  if (!(inner instanceof z.ZodObject)) return sample(key);
  return Object.fromEntries(Object.keys(inner.shape).map((sub) => [sub, sample(`${key}.${sub}`)]));
}

/** Fields both server types have, but `type`. */
export function sharedFields(): string[] {
  return Object.keys(LocalServerConfig.shape).filter((key) => key !== 'type' && Object.hasOwn(RemoteServerConfig.shape, key));
}

function unwrap(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
    return unwrap(schema.unwrap() as z.ZodType);
  }
  return schema;
}
