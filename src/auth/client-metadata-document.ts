/**
 * The worker's OAuth client ID metadata document (Client ID Metadata
 * Documents): with a public URL the management app publishes it at
 * `<publicUrl>/oauth/client-metadata.json`, and that URL is the worker's
 * `client_id` at every authorization server that advertises
 * `client_id_metadata_document_supported` — the server fetches the document
 * instead of taking a dynamic registration. One document serves every OAuth
 * server of the worker (and every worker behind the same public URL): it
 * names no scope, each authorization request asks for its own.
 */
import type { OAuthClientMetadata } from '@modelcontextprotocol/client';
import { CALLBACK_PATH } from './provider.js';

/** Where the management app serves the document, relative to the public URL. */
export const CLIENT_METADATA_PATH = '/oauth/client-metadata.json';

/** The document as served: its own URL as `client_id`, plus the client metadata of RFC 7591. */
export type ClientMetadataDocument = OAuthClientMetadata & { client_id: string };

/** `<publicUrl>/oauth/client-metadata.json`: the document's URL, and so its `client_id`. */
function clientMetadataDocumentUrl(publicUrl: string): string {
  return `${withoutTrailingSlash(publicUrl)}${CLIENT_METADATA_PATH}`;
}

/**
 * The URL to offer as `client_id` for a worker at `publicUrl`: the document's,
 * when the public URL is HTTPS. Authorization servers fetch only HTTPS
 * client ids (and the SDK refuses any other), so behind a plain-HTTP public
 * URL the worker keeps to dynamic registration; undefined then.
 */
export function publicClientMetadataUrl(publicUrl: string | undefined): string | undefined {
  if (publicUrl === undefined || new URL(publicUrl).protocol !== 'https:') return undefined;
  return clientMetadataDocumentUrl(publicUrl);
}

/**
 * The document for a worker at `publicUrl`. A public client
 * (`token_endpoint_auth_method: none`, PKCE): a document anyone can read
 * cannot carry a secret. The redirect URI is the management app's callback,
 * which any worker behind the public URL answers.
 */
export function clientMetadataDocument(publicUrl: string): ClientMetadataDocument {
  return {
    client_id: clientMetadataDocumentUrl(publicUrl),
    client_name: 'mcp-fleet',
    redirect_uris: [`${withoutTrailingSlash(publicUrl)}${CALLBACK_PATH}`],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
