// The one place where errors become HTTP responses. Routes throw; nothing formats its own error JSON.
import type { ErrorRequestHandler, Response } from 'express';
import { AppError, type ErrorCode } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_scope: 403,
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
  invalid_body: 422,
  invalid_domain: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  internal: 500,
  managed_disabled: 503,
};

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

export function sendError(res: Response, err: AppError): void {
  if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter));
  res.status(STATUS[err.code]).json({ error: { code: err.code, message: err.message, ...err.extra } });
}

/** Maps body-parser failures and AppErrors to the envelope; anything else is a logged 500. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const type = (err as { type?: string })?.type;
    if (err instanceof AppError) return sendError(res, err);
    if (type === 'entity.parse.failed') return sendError(res, new AppError('invalid_request', 'request body is not valid JSON'));
    if (type === 'entity.too.large') return sendError(res, new AppError('payload_too_large', 'request body is too large'));
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      return sendError(res, new AppError('invalid_request', 'unsupported request body encoding'));
    }
    log.error({ err, method: req.method, path: req.path }, 'unhandled error');
    sendError(res, new AppError('internal', 'internal error'));
  };
}
