import { afterEach, expect, test } from 'vitest';
import { cleanEnv } from './env.js';

const set: string[] = [];
afterEach(() => {
  for (const key of set.splice(0)) delete process.env[key];
});
function setEnv(key: string, value: string) {
  set.push(key);
  process.env[key] = value;
}

test('cleanEnv drops every MCP_FLEET_*, OTEL_* and MCP_CONFORMANCE_* variable of the runner, keeps the rest, and adds what the test asks for', () => {
  setEnv('MCP_FLEET_DATABASE_URL', 'postgres://elsewhere/db');
  setEnv('MCP_FLEET_SOMETHING_NEW', 'x');
  setEnv('OTEL_EXPORTER_OTLP_ENDPOINT', 'http://collector:4318');
  setEnv('MCP_CONFORMANCE_SCENARIO', 'auth/basic');
  setEnv('CLEAN_ENV_KEPT', 'kept');
  const env = cleanEnv({ MCP_FLEET_API_TOKEN: 'from-the-test' });
  expect(Object.keys(env).filter((key) => /^(MCP_FLEET_|OTEL_|MCP_CONFORMANCE_)/.test(key))).toEqual(['MCP_FLEET_API_TOKEN']);
  expect(env['MCP_FLEET_API_TOKEN']).toBe('from-the-test');
  expect(env['CLEAN_ENV_KEPT']).toBe('kept');
  expect(env['PATH']).toBe(process.env['PATH']);
});
