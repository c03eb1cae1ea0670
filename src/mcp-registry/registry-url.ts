// Which MCP Registry: its own module, so the CLI checks the variable without loading the client and its schemas.

/** The official MCP Registry. */
export const OFFICIAL_REGISTRY_URL = 'https://registry.modelcontextprotocol.io';
/** Environment variable naming another registry (a subregistry, a mirror, a test fixture). */
export const REGISTRY_URL_ENV = 'MCP_FLEET_REGISTRY_URL';

/** The registry base URL: the option, else `$MCP_FLEET_REGISTRY_URL`, else the official registry. */
export function registryUrl(option?: string): string {
  const value = option ?? process.env[REGISTRY_URL_ENV];
  return value === undefined || value === '' ? OFFICIAL_REGISTRY_URL : value;
}
