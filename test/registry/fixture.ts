// The local MCP Registry of test/fixtures/registry-server.mjs, typed for the tests.
import { readFileSync } from 'node:fs';
// @ts-expect-error a plain .mjs fixture without types (typed below)
import { startRegistryServer as start } from '../fixtures/registry-server.mjs';
import type { RegistryServer } from '../../src/mcp-registry/server-json.js';

export interface LocalRegistry {
  url: string;
  /** Every path (with query) asked for, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Starts the fixture registry on a free loopback port; `extra` entries are served beside the fixture files. */
export function startRegistry(extra: Array<Record<string, unknown>> = []): Promise<LocalRegistry> {
  const entries = [...fixtureEntries(), ...extra].sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return start({ entries }) as Promise<LocalRegistry>;
}

/** One fixture file's entry (a real server.json copied from the registry's docs). */
export function fixtureEntry(file: string): RegistryServer {
  return JSON.parse(readFileSync(new URL(`../fixtures/registry/${file}.json`, import.meta.url), 'utf8')) as RegistryServer;
}

function fixtureEntries(): Array<Record<string, unknown>> {
  return ['brave-search', 'filesystem', 'weather-mcp', 'knapcode-samplemcpserver', 'remote-weather', 'mcp-fs'].map(
    (file) => fixtureEntry(file) as unknown as Record<string, unknown>,
  );
}

/** The registry's entry of the HTTP fixture at `url`: a remote that needs the secret header `X-Api-Key`. */
export function headerSecretEntry(url: string): Record<string, unknown> {
  return {
    name: 'io.github.mcp-fleet-test/local-http',
    title: 'Local HTTP',
    description: 'The HTTP fixture, needing a secret header',
    version: '1.0.0',
    remotes: [
      { type: 'streamable-http', url, headers: [{ name: 'X-Api-Key', description: 'API key of the service', isRequired: true, isSecret: true }] },
    ],
  };
}
