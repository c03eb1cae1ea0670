// auth.kind "workload_identity" and "enterprise" as worker config, against a
// real authorization server that speaks their grants (grant-server.ts) and an
// MCP resource server that accepts only its tokens. The JWTs are read from
// files, as a platform mounts them, so a rotated one is followed.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toResponse } from '../../src/config/masking.js';
import { RemoteServerConfig } from '../../src/config/schema.js';
import { connect } from '../../src/connection/connection.js';
import { FleetError } from '../../src/errors.js';
import { tempDir } from '../connection/helpers.js';
import { startGrantServer, type GrantServer } from './grant-server.js';
import { startMcpResourceServer, type McpResourceServer } from './servers.js';

const WORKLOAD_JWT = 'eyJ.workload-identity-token.0001';
const ID_TOKEN = 'eyJ.enterprise-id-token.0002';
const CLIENT_SECRET = 'enterprise-client-secret-0003';
const IDP_SECRET = 'idp-client-secret-0004';

let as: GrantServer | undefined;
let mcp: McpResourceServer | undefined;
afterEach(async () => {
  await mcp?.close();
  await as?.close();
  as = mcp = undefined;
});

async function servers(options: { quoteRefusedToken?: boolean } = {}): Promise<string> {
  as = await startGrantServer({ workloadJwt: WORKLOAD_JWT, idToken: ID_TOKEN, clients: { 'mcp-client': CLIENT_SECRET, 'idp-client': IDP_SECRET }, ...options });
  mcp = await startMcpResourceServer(as.issuer);
  return mcp.url;
}

function config(url: string, auth: Record<string, unknown>): RemoteServerConfig {
  return RemoteServerConfig.parse({ type: 'remote', url, transport: 'streamable_http', auth });
}

async function echo(config: RemoteServerConfig): Promise<unknown> {
  const connection = await connect('m', config);
  try {
    return (await connection.callTool('echo', { text: 'hi' })).content;
  } finally {
    await connection.close();
  }
}

describe('auth.kind workload_identity', () => {
  it("trades the workload's JWT from its file for an access token (jwt-bearer)", async () => {
    const url = await servers();
    const file = join(tempDir(), 'token');
    writeFileSync(file, `${WORKLOAD_JWT}\n`);
    expect(await echo(config(url, { kind: 'workload_identity', client_id: 'workload', assertion_file: file }))).toEqual([{ type: 'text', text: 'hi' }]);
    expect(as!.requests).toEqual([{ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: WORKLOAD_JWT, client_id: 'workload' }]);
  });

  it('a missing token file is an auth error naming the field and the path', async () => {
    const url = await servers();
    const missing = join(tempDir(), 'absent');
    const error = await echo(config(url, { kind: 'workload_identity', client_id: 'workload', assertion_file: missing })).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('auth');
    expect((error as FleetError).message).toContain(`cannot read auth.assertion_file ${missing}: ENOENT`);
  });
});

/** The enterprise auth of the servers above, its ID token read from `file`. */
function enterpriseAuth(file: string) {
  return {
    kind: 'enterprise',
    client_id: 'mcp-client',
    client_secret: CLIENT_SECRET,
    idp_token_endpoint: `${as!.issuer}/token`,
    idp_client_id: 'idp-client',
    idp_client_secret: IDP_SECRET,
    id_token_file: file,
    issuer: as!.issuer,
  };
}

describe('auth.kind enterprise', () => {
  it('exchanges the ID token at the IdP, then the grant for an access token, with no consent', async () => {
    const url = await servers();
    const file = join(tempDir(), 'id-token');
    writeFileSync(file, ID_TOKEN);
    const auth = enterpriseAuth(file);
    expect(await echo(config(url, auth))).toEqual([{ type: 'text', text: 'hi' }]);
    expect(as!.requests.map((request) => [request.grant_type, request.client_id])).toEqual([
      ['urn:ietf:params:oauth:grant-type:token-exchange', 'idp-client'],
      ['urn:ietf:params:oauth:grant-type:jwt-bearer', 'mcp-client'],
    ]);
    expect(as!.requests[0]!.subject_token).toBe(ID_TOKEN);
    const shown = JSON.stringify(toResponse(config(url, auth)));
    for (const secret of [CLIENT_SECRET, IDP_SECRET]) expect(shown).not.toContain(secret);
    expect(JSON.parse(shown).auth).toMatchObject({ kind: 'enterprise', has_client_secret: true, has_idp_client_secret: true, id_token_file: file });
  });

  it('an ID token the IdP refuses is an auth error, and the token is not in it even when the IdP quotes it', async () => {
    const url = await servers({ quoteRefusedToken: true });
    const file = join(tempDir(), 'id-token');
    const stale = 'eyJ.stale-id-token-SECRET.0009';
    writeFileSync(file, stale);
    const auth = enterpriseAuth(file);
    const error = await echo(config(url, auth)).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('auth');
    expect((error as FleetError).message).toContain('the identity provider refused the token exchange: invalid_grant - rejected subject=••••');
    expect((error as FleetError).message).not.toContain('SECRET');
  });
});
