/**
 * A request on a live connection (resources, prompts, listings) as a CLIENT
 * span and a `mcp.client.operation.duration` sample, the server found from
 * the SDK client that connect() opened.
 */
import type { Attributes } from '@opentelemetry/api';
import type { Client } from '@modelcontextprotocol/client';
import { ATTR, requestAttributes, sessionAttributes } from './attributes.js';
import { connectionServer } from './lifecycle.js';
import { observe } from './spans.js';

/** What a request adds to its span. */
export interface RequestDetail {
  /** The tool or prompt the span name ends with. */
  target?: string;
  /** Attributes for both span and metric (low cardinality). */
  attributes?: Attributes;
  /** Attributes of the span alone. */
  detail?: Attributes;
  /** The caller's signal: a request it cancelled is recorded as cancelled, not failed. */
  signal?: AbortSignal | undefined;
}

/** Runs `run`, the request `method` of `client`, observed. */
export function observeRequest<T>(client: Client, method: string, request: RequestDetail, run: () => Promise<T>): Promise<T> {
  const attributes = (): Attributes => {
    const known = connectionServer(client);
    const built = known === undefined
      ? sessionAttributes(client, { [ATTR.methodName]: method })
      : requestAttributes(known.server, known.config, client, method);
    return request.attributes === undefined ? built : Object.assign(built, request.attributes);
  };
  const { detail, signal } = request;
  return observe(
    {
      method,
      ...(request.target === undefined ? {} : { target: request.target }),
      attributes,
      ...(detail === undefined ? {} : { detail: () => detail }),
      ...(signal === undefined ? {} : { signal }),
    },
    run,
  );
}
