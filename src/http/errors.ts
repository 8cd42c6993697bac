// The one place where errors become HTTP responses. Routes throw; nothing formats its own error JSON.
// STATUS is also what the API description (http/openapi/) reads each error code's status from.
import type { ErrorRequestHandler, Response } from 'express';
import { AppError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { isDatabaseUnavailable } from '../db/index.js';
import type { ErrorCode } from '../contract/vocabulary.js';

export const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  forbidden: 403,
  plan_limit: 403,
  not_found: 404,
  conflict: 409,
  not_cancelable: 409,
  already_exists: 409,
  domain_claimed: 409,
  existing_mx: 409,
  shared_domain: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_body: 422,
  invalid_domain: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  internal: 500,
  managed_disabled: 503,
  unavailable: 503,
};

/** Seconds a client is asked to wait while the database is away: about a restart's length. */
const UNAVAILABLE_RETRY_AFTER = 5;

function sendError(res: Response, err: AppError): void {
  // The audit log records how a dashboard action ended by its code.
  res.locals.errorCode = err.code;
  if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter));
  res.status(STATUS[err.code]).json({ error: { code: err.code, message: err.message, ...err.extra } });
}

// What went wrong while reading a request (the router, body-parser, zlib) as a client error; null
// for anything else. These errors come from libraries, so they are recognised by their fields.
function requestError(err: unknown): AppError | null {
  const e = err as { type?: string; status?: number; code?: string; errno?: number } | null;
  if (!e || typeof e !== 'object') return null;
  if (e.type === 'entity.parse.failed') return new AppError('invalid_request', 'request body is not valid JSON');
  if (e.type === 'entity.too.large') return new AppError('payload_too_large', 'request body is too large');
  if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported')
    return new AppError('invalid_request', 'unsupported request body encoding');
  // A Content-Encoding that does not decode: zlib's codes are Z_* (gzip, deflate) or ERR_* (brotli, size).
  if (typeof e.code === 'string' && (/^Z_/.test(e.code) || /^ERR_(ZLIB|BROTLI|BUFFER_TOO_LARGE)/.test(e.code))) {
    return new AppError('invalid_request', 'request body could not be decompressed (Content-Encoding)');
  }
  if (err instanceof URIError) return new AppError('invalid_request', 'a path parameter is not valid percent-encoding');
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    const code = e.status === 413 ? 'payload_too_large' : e.status === 415 ? 'unsupported_media_type' : 'invalid_request';
    return new AppError(code, (err as Error).message || 'bad request');
  }
  return null;
}

/** Maps AppErrors and request-reading failures to the envelope; anything else is a logged 500. */
export function errorHandler(log: Logger, send: (res: Response, err: AppError) => void = sendError): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof AppError) return send(res, err);
    const refused = requestError(err);
    if (refused) return send(res, refused);
    if (isDatabaseUnavailable(err)) {
      // Expected while the database restarts or fails over: a warning, and the client retries.
      log.warn({ err: { code: (err as { code?: string }).code, message: (err as Error).message }, path: req.path }, 'database unavailable');
      return send(res, new AppError('unavailable', 'the database is not answering; try again shortly', {}, UNAVAILABLE_RETRY_AFTER));
    }
    log.error({ err, requestId: res.locals.requestId, method: req.method, path: req.path }, 'unhandled error');
    send(res, new AppError('internal', 'internal error'));
  };
}
