// The environment a test hands a child process (a worker, the CLI, npm).

/** Whether a variable of the test runner's environment could redirect or reconfigure what a test starts. */
const redirects = (key: string): boolean => /^(MCP_FLEET_|OTEL_|MCP_CONFORMANCE_)/.test(key);

/**
 * The test's environment without any MCP_FLEET_*, OTEL_* or MCP_CONFORMANCE_*
 * variable (a token, a state dir, a database URL, an exporter or a
 * conformance scenario of whoever runs the tests would point the child
 * elsewhere), PATH, HOME and the rest kept; `extra` on top.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!redirects(key)) env[key] = value;
  return { ...env, ...extra };
}
