import type { ErrorRequestHandler, RequestHandler } from 'express';
import { z } from 'zod';
import { ConfigEntryInvalidError, ConfigFileBrokenError } from '../config/store.js';
import { DatabaseUnavailableError } from '../fleet/database-errors.js';
import {
  ConfigError,
  ConflictError,
  FleetError,
  HostNotRunningError,
  NotFoundError,
  NotReadyError,
  PreconditionFailedError,
  StartFailedError,
} from '../errors.js';
import type { ErrorKind } from '../errors.js';
import type { Logger } from '../telemetry/index.js';
import { AuthNotApplicableError } from '../auth/server-auth.js';
import { GrantMissingError, MissingInputsError } from '../host/sessions.js';
import { redact, secretValuesOf } from '../config/masking.js';
import { describeZodError } from '../config/zod-errors.js';

/** The body of every error response: `{error: {code, message, field?}}`. */
export interface ErrorBody {
  error: { code: string; message: string; field?: string; error_kind?: ErrorKind; oldest_seq?: number; newest_seq?: number; version?: number | null };
}

/** An error that already knows its HTTP answer. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    /** More members of the error body (`oldest_seq` or `newest_seq` of a 410). */
    readonly details?: Pick<ErrorBody['error'], 'oldest_seq' | 'newest_seq'>,
  ) {
    super(message);
  }
}

/** Turns what a handler threw into a status and an error body. */
export function toErrorResponse(err: unknown): { status: number; body: ErrorBody } {
  const answer = (status: number, code: string, message: string, field?: string) => ({
    status,
    body: { error: field === undefined ? { code, message } : { code, message, field } },
  });
  if (err instanceof HttpError) {
    const response = answer(err.status, err.code, err.message, err.field);
    Object.assign(response.body.error, err.details);
    return response;
  }
  if (err instanceof z.ZodError) {
    const { message, field } = describeZodError(err);
    return answer(400, 'invalid_request', message || 'invalid request', field === '' ? undefined : field);
  }
  // The file on disk is the problem, not the request: nothing can be saved until it is fixed.
  if (err instanceof ConfigFileBrokenError) return answer(409, 'config_file_broken', err.message);
  if (err instanceof ConfigEntryInvalidError) return answer(409, 'config_entry_invalid', err.message, err.field);
  if (err instanceof ConfigError) return answer(400, 'invalid_config', err.message, err.field);
  if (err instanceof NotFoundError) return answer(404, 'not_found', err.message);
  if (err instanceof ConflictError) return answer(409, 'conflict', err.message);
  if (err instanceof NotReadyError) return answer(409, 'not_ready', err.message);
  // A per_user server's session that cannot open until the caller gives what it needs.
  if (err instanceof MissingInputsError) return answer(409, 'missing_inputs', err.message);
  if (err instanceof GrantMissingError) return answer(409, 'needs_authorization', err.message);
  if (err instanceof AuthNotApplicableError) return answer(409, err.code, err.message);
  if (err instanceof HostNotRunningError) return answer(503, err.reason, err.message);
  if (err instanceof PreconditionFailedError) {
    return { status: 412, body: { error: { code: 'version_mismatch', message: err.message, version: err.actual } } };
  }
  // Nothing was changed: management writes wait for the database, which is away.
  if (err instanceof DatabaseUnavailableError) return answer(503, err.code, err.message);
  if (err instanceof StartFailedError) {
    return { status: 422, body: { error: { code: 'start_failed', message: err.message, error_kind: err.kind } } };
  }
  const parserError = bodyParserError(err) ?? lowerLayerError(err);
  if (parserError) return parserError;
  // Fleet errors carry one secret-free line by contract; anything else may not.
  // An OAuth failure is the authorization server's (or its callback port's), not ours.
  if (err instanceof FleetError && err.kind === 'auth') return answer(502, 'auth', err.message);
  // Another party did not answer (the authorization server of a consent): try again later.
  if (err instanceof FleetError && err.kind === 'unreachable') return answer(503, 'unreachable', err.message);
  if (err instanceof FleetError) return answer(500, err.kind, err.message);
  return answer(500, 'internal', 'internal error');
}

/** body-parser's errors carry a `type`; its messages can quote the body, so ours are fixed text. */
function parsesAsJson(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function bodyParserError(err: unknown): { status: number; body: ErrorBody } | undefined {
  const type = (err as { type?: unknown } | null)?.type;
  const body = (code: string, message: string) => ({ error: { code, message } });
  switch (type) {
    case 'entity.too.large':
      return { status: 413, body: body('payload_too_large', 'request body is larger than the limit') };
    case 'entity.parse.failed':
      // Strict parsing takes objects and arrays only: `null` or `42` is JSON, just not a body.
      return { status: 400, body: body('invalid_json', parsesAsJson((err as { body?: unknown }).body) ? 'request body must be a JSON object' : 'request body is not valid JSON') };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return { status: 415, body: body('unsupported_media_type', 'request body encoding is not supported') };
    case 'request.aborted':
      return { status: 400, body: body('aborted', 'request body was not received in full') };
    case 'request.size.invalid':
      return { status: 400, body: body('invalid_request', 'request body length does not match Content-Length') };
    default:
      return undefined;
  }
}

/**
 * Other client errors raised below the routes, which carry a 4xx `status`
 * but no body-parser `type`: a path that is not valid percent-encoding (the
 * router's URIError), a compressed body that does not inflate (zlib's error,
 * passed on by body-parser). Their messages quote the request, so ours are
 * fixed text.
 */
function lowerLayerError(err: unknown): { status: number; body: ErrorBody } | undefined {
  const { status, code } = (err ?? {}) as { status?: unknown; code?: unknown };
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  const body = (message: string) => ({ error: { code: 'invalid_request', message } });
  if (err instanceof URIError) return { status: 400, body: body('request path is not valid percent-encoding') };
  // zlib's codes (Z_DATA_ERROR, Z_BUF_ERROR) and brotli's (ERR__ERROR_FORMAT_PADDING_1, ERR_BROTLI_…).
  if (typeof code === 'string' && /^(Z_|ERR__ERROR|ERR_BROTLI)/.test(code)) {
    return { status: 400, body: body('request body could not be decompressed (Content-Encoding)') };
  }
  return { status, body: body(`request refused (HTTP ${status})`) };
}

/**
 * The last middleware: answers `{error:{code,message,field?}}`. Every string
 * of the request body's `env`, `headers` and `auth` is scrubbed from the
 * message too, in case a lower layer quoted a value.
 */
export function errorHandler(logger?: Logger): ErrorRequestHandler {
  return function handleError(err, req, res, _next) {
    const { status, body } = toErrorResponse(err);
    // A 5xx the worker chose to answer (the registry away, the host stopping, another party that did not
    // answer: all but 500) is an outside condition, said in one warn line; a 500 is a failure of the
    // worker's own, logged with its stack.
    body.error.message = redact(body.error.message, secretValuesOf(req.body));
    if (status >= 500 && (err instanceof HttpError || status !== 500)) {
      logger?.warn({ method: req.method, path: req.path, status, code: body.error.code }, `request answered ${status}: ${body.error.message}`);
    } else if (status >= 500) logger?.error({ err, method: req.method, path: req.path }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(status).json(body);
  };
}

/** 404 for routes that do not exist, in the same error shape. */
export const notFoundHandler: RequestHandler = function routeNotFound(req, _res, next) {
  next(new HttpError(404, 'not_found', `no route ${req.method} ${req.path}`));
};
