// The management API as the page calls it. Same origin: the browser adds the
// HttpOnly session cookie and the Origin header, so no script handles the token.

/** An error answer of the API: `{error: {code, message, field?, error_kind?}}`. */
export class ApiError extends Error {
  constructor(status, code, message, field, errorKind) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.field = field;
    this.errorKind = errorKind;
  }
}

let onUnauthorized = () => {};

/** Called when the session is gone (401), so the page can ask to sign in again. */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

/** For a 401 met outside `api()` (the playground's streamed call). */
export const reportUnauthorized = (err) => onUnauthorized(err);

/** JSON in, JSON out; throws `ApiError` for any non-2xx answer. */
export async function api(path, { method = 'GET', body } = {}) {
  const init = { method, credentials: 'same-origin', cache: 'no-store', headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let json;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const error = json?.error ?? {};
    const message = error.message ?? `HTTP ${res.status}`;
    const err = new ApiError(res.status, error.code ?? 'http_error', message, error.field, error.error_kind);
    // A failed sign-in is answered by its form; any other 401 means the session ended.
    if (res.status === 401 && !path.startsWith('/ui/session')) onUnauthorized(err);
    throw err;
  }
  return json;
}

export const session = () => api('/ui/session');
export const signIn = (token) => api('/ui/session', { method: 'POST', body: { token } });
export const signOut = () => api('/ui/session', { method: 'DELETE' });
export const catalog = () => api('/api/mcp/catalog');
export const me = () => api('/api/mcp/me');
export const events = (since = 0) => api(`/api/mcp/events?since=${since}`);
export const fleet = () => api('/api/mcp/fleet');
export const searchTools = (q, limit) => api(`/api/mcp/tools/search?${new URLSearchParams({ q, limit: String(limit) })}`);
export const addServer = (body) => api('/api/mcp/servers', { method: 'POST', body });
export const refreshServer = (name) => api(`/api/mcp/servers/${encodeURIComponent(name)}/refresh`, { method: 'POST' });
export const patchServer = (name, body) => api(`/api/mcp/servers/${encodeURIComponent(name)}`, { method: 'PATCH', body });
export const deleteServer = (name) => api(`/api/mcp/servers/${encodeURIComponent(name)}`, { method: 'DELETE' });
export const restartServer = (name) => api(`/api/mcp/servers/${encodeURIComponent(name)}/restart`, { method: 'POST' });
export const beginAuth = (name) => api(`/api/mcp/servers/${encodeURIComponent(name)}/auth`, { method: 'POST' });
export const searchRegistry = (q, cursor) =>
  api(`/api/mcp/registry/servers?${new URLSearchParams({ q, ...(cursor ? { cursor } : {}) })}`);
export const installFromRegistry = (body) => api('/api/mcp/registry/install', { method: 'POST', body });
export const approvals = () => api('/api/mcp/approvals');
export const decideApproval = (id, decision) =>
  api(`/api/mcp/approvals/${encodeURIComponent(id)}`, { method: 'POST', body: { decision } });
