import type { RequestHandler } from 'express';
import type { McpHost } from '../../host.js';

/** How long an authorization server may keep the document before fetching it again (it changes only with the public URL). */
const DOCUMENT_MAX_AGE_SECONDS = 300;

/**
 * `GET /oauth/client-metadata.json`: the worker's OAuth client ID metadata
 * document, fetched by authorization servers that take URL client ids. Not
 * found without a public URL: the worker then has no such client id.
 */
export function clientMetadataRoute(host: McpHost): RequestHandler {
  return function clientMetadata(_req, res, next) {
    const document = host.clientMetadataDocument();
    if (document === null) return next();
    res.set({ 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': `public, max-age=${DOCUMENT_MAX_AGE_SECONDS}` });
    res.send(JSON.stringify(document));
  };
}
