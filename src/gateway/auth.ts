/**
 * Who calls the gateway, as an OAuth protected resource does it: a bearer
 * token that is the admin token, a user key (`mcpf_…`), or a JWT access token
 * of the configured OpenID Connect issuer for this resource. Anything else is
 * answered 401 with the `WWW-Authenticate` challenge that points a client at
 * the protected resource metadata (RFC 9728), from where it finds the issuer.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { createRemoteJWKSet } from 'jose';
import { z } from 'zod';
import { tokensEqual } from '../http/api-token.js';
import { setCaller, userOf } from '../http/caller.js';
import { isUserKey, type OidcOptions, type Principal, type Users } from '../users/index.js';
import { principalOfClaims } from '../users/oidc.js';

/** Where the gateway's protected resource metadata lives, under the origin (RFC 9728, path-suffixed). */
export const WELL_KNOWN_PREFIX = '/.well-known/oauth-protected-resource';

export interface GatewayAuthOptions {
  /** The admin token (`api_token`): calls as the admin. */
  token: string;
  /** The users whose keys are let in. */
  users: Users;
  /** The issuer whose JWT access tokens are taken (`serve --oidc-issuer`), and its claims; without it only keys and the admin token are. */
  oidc?: Pick<OidcOptions, 'issuer' | 'userClaim' | 'groupsClaim'> | undefined;
  /** `serve --public-url`: the resource is `<publicUrl><path>`; without it, the request's own origin. */
  publicUrl?: string | undefined;
  /** The resource's path on the origin; default `/mcp`. A token must name `<origin><path>` as its audience. */
  path?: string;
}

/** What a verified caller is: the principal (undefined: the admin) and when their token stops working. */
export interface GatewayCaller {
  principal: Principal | undefined;
  /** Epoch seconds, for a JWT. */
  expiresAt?: number;
}

/** The part of the discovery document the gateway needs. */
const Discovery = z.object({ issuer: z.string(), jwks_uri: z.string().url() });

/** A refused bearer: the `error` of the challenge, and why (no secret in it). */
class Refused extends Error {
  constructor(
    readonly error: 'invalid_token' | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** The origin and path a request reached the gateway at: the resource its tokens must be for. */
export function resourceOf(req: Request, options: Pick<GatewayAuthOptions, 'publicUrl' | 'path'>): string {
  const path = options.path ?? '/mcp';
  if (options.publicUrl !== undefined) return `${options.publicUrl.replace(/\/+$/, '')}${path}`;
  return `${req.protocol}://${req.headers.host ?? 'localhost'}${path}`;
}

/** The URL of the metadata document of `resource`. */
export function metadataUrlOf(resource: string): string {
  const url = new URL(resource);
  return `${url.origin}${WELL_KNOWN_PREFIX}${url.pathname === '/' ? '' : url.pathname}`;
}

/** RFC 9728 protected resource metadata for the resource a request names. */
export function protectedResourceMetadata(req: Request, options: Pick<GatewayAuthOptions, 'oidc' | 'publicUrl' | 'path'>): Record<string, unknown> {
  return {
    resource: resourceOf(req, options),
    ...(options.oidc && { authorization_servers: [options.oidc.issuer] }),
    bearer_methods_supported: ['header'],
    resource_name: 'mcp-fleet',
  };
}

/**
 * Express middleware that lets in a request with a bearer token the gateway
 * takes, recording who it acts for (`userOf(res)`, `gatewayCallerOf(res)`),
 * and answers any other 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
 * (plus `error="invalid_token"` for a token it refused: bad, expired, or for
 * another audience).
 */
export function gatewayAuth(options: GatewayAuthOptions): RequestHandler {
  const verifyJwt = options.oidc === undefined ? undefined : jwtVerifier(options.oidc);
  const keyHolders = openWhileSignedIn(options.users);

  async function callerOf(presented: string, resource: string, res: Response): Promise<GatewayCaller> {
    if (tokensEqual(options.token, presented)) return { principal: undefined };
    if (isUserKey(presented)) {
      const user = await options.users.authenticate(presented);
      if (user === undefined) throw new Refused('invalid_token', 'unknown user key');
      keyHolders.track(res, user.id, async () => (await options.users.authenticate(presented))?.id === user.id);
      return { principal: user };
    }
    if (verifyJwt === undefined) throw new Refused('invalid_token', 'not a token this gateway takes');
    return verifyJwt(presented, resource);
  }

  return function authenticateGateway(req, res, next) {
    const resource = resourceOf(req, options);
    const header = req.headers.authorization;
    const presented = header === undefined ? undefined : /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1];
    const refuse = (refusal: Refused) => {
      const parts = [`resource_metadata="${metadataUrlOf(resource)}"`];
      if (refusal.error !== undefined) parts.push(`error="${refusal.error}"`, `error_description="${refusal.message.replace(/["\\]/g, '')}"`);
      res
        .status(401)
        .set('WWW-Authenticate', `Bearer ${parts.join(', ')}`)
        .json({ error: refusal.error ?? 'unauthorized', error_description: refusal.message });
    };
    if (presented === undefined) {
      refuse(new Refused(header === undefined ? undefined : 'invalid_token', header === undefined ? 'a bearer token is required' : 'malformed Authorization header'));
      return;
    }
    callerOf(presented, resource, res).then(
      (caller) => {
        setCaller(res, caller.principal);
        res.locals.gatewayCaller = caller;
        next();
      },
      (error: unknown) => {
        if (error instanceof Refused) refuse(error);
        else next(error);
      },
    );
  };
}

/** How often an open response of a user asks again whether their key holds (another worker may have rotated it). */
export const KEY_RECHECK_MS = 15_000;

/**
 * The open responses of requests made with user keys (a session's `GET`
 * stream, a `subscriptions/listen` stream, a call still running), each ended
 * once its key no longer holds: at once when the key was rotated or its user
 * removed on this worker, else at the next recheck, every
 * {@link KEY_RECHECK_MS}. One listener and one timer for all of them, and only
 * while any is open: a request that ends at once costs a map entry.
 */
function openWhileSignedIn(users: Users): { track(res: Response, user: string, still: () => Promise<boolean>): void } {
  const open = new Map<Response, { user: string; still: () => Promise<boolean> }>();
  let unsubscribe: (() => void) | undefined;
  let sweep: NodeJS.Timeout | undefined;
  const end = (res: Response) => void res.destroy();
  return {
    track(res, user, still) {
      open.set(res, { user, still });
      unsubscribe ??= users.onSignedOut((name) => {
        for (const [held, holder] of open) if (holder.user === name) end(held);
      });
      sweep ??= setInterval(() => {
        for (const [held, holder] of open) holder.still().then((holds) => holds || end(held), () => {});
      }, KEY_RECHECK_MS).unref();
      res.once('close', () => {
        open.delete(res);
        if (open.size > 0) return;
        clearInterval(sweep);
        sweep = undefined;
        unsubscribe?.();
        unsubscribe = undefined;
      });
    },
  };
}

/** The caller `gatewayAuth` let in. */
export function gatewayCallerOf(res: Response): GatewayCaller {
  return (res.locals.gatewayCaller as GatewayCaller | undefined) ?? { principal: userOf(res) };
}

/** Verifies a JWT access token of the issuer for a resource: its signature (the issuer's JWKS), `iss`, `aud`, `exp`. */
function jwtVerifier(oidc: NonNullable<GatewayAuthOptions['oidc']>): (token: string, resource: string) => Promise<GatewayCaller> {
  const names = { userClaim: oidc.userClaim ?? 'sub', groupsClaim: oidc.groupsClaim ?? 'groups' };
  let keys: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;

  /** The issuer's key set, found through its discovery document once (again after a failure). */
  function keySet() {
    keys ??= (async () => {
      const url = `${oidc.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
      const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new Error(`the OIDC discovery document at ${url} answered HTTP ${response.status}`);
      const metadata = Discovery.parse(await response.json());
      if (metadata.issuer !== oidc.issuer) throw new Error(`the OIDC discovery document names the issuer ${metadata.issuer}, not ${oidc.issuer}`);
      // jose loads with the first token to verify, not with the package (docs/library.md).
      const { createRemoteJWKSet } = await import('jose');
      return createRemoteJWKSet(new URL(metadata.jwks_uri));
    })().catch((error: unknown) => {
      keys = undefined;
      throw error;
    });
    return keys;
  }

  return async (token, resource) => {
    const jwks = await keySet();
    const { jwtVerify } = await import('jose');
    const { payload } = await jwtVerify(token, jwks, { issuer: oidc.issuer, audience: resource, requiredClaims: ['exp'] }).catch((error: unknown) => {
      throw new Refused('invalid_token', `the access token does not verify: ${(error as Error).message}`);
    });
    const principal = principalOfClaims(payload as Record<string, unknown>, names, (why) =>
      new Refused('invalid_token', why === 'admin' ? 'the access token names the admin principal' : `the access token has no usable "${names.userClaim}" claim`),
    );
    return { principal, ...(payload.exp !== undefined && { expiresAt: payload.exp }) };
  };
}
