// The fleet OAuth tests' servers: a real authorization server (oidc-provider,
// rotating refresh tokens) and a real MCP server behind it, started once per
// test file, and the worker config of a server that reaches them.
import { afterAll, beforeAll } from 'vitest';
import { startAuthorizationServer, startMcpResourceServer, type AuthorizationServer, type McpResourceServer } from '../oauth/servers.js';

export interface OAuthServers {
  as: AuthorizationServer;
  mcp: McpResourceServer;
  /** A remote server entry with `auth.kind` oauth that reaches `mcp`. */
  serverConfig(): Record<string, unknown>;
}

/** Starts both servers before the file's tests and closes them after; read its fields inside tests. */
export function oauthServersForFile(): OAuthServers {
  // Filled in by beforeAll: a test reads them only once they are set.
  const servers: Partial<OAuthServers> & Pick<OAuthServers, 'serverConfig'> = {
    serverConfig: () => ({ type: 'remote', url: servers.mcp!.url, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' } }),
  };
  beforeAll(async () => {
    servers.as = await startAuthorizationServer({ accessTokenTtl: 600 });
    servers.mcp = await startMcpResourceServer(servers.as.issuer);
  });
  afterAll(async () => {
    await servers.mcp?.close();
    await servers.as?.close();
  });
  return servers as OAuthServers;
}
