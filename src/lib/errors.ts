// The closed catalogue of error codes. Domain code throws AppError with a code and never a status
// number; http/errors.ts maps codes to statuses and the envelope, smtp/ maps them to replies.

import type { ErrorCode } from '../contract/vocabulary.js';

/** One validation problem, as listed in `error.issues`. */
export interface Issue {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  /** Extra fields for the envelope (`issues`, `limit`, `status`, `hosts`, …). */
  readonly extra: Record<string, unknown>;
  /** Seconds a client should wait (rate limits). */
  readonly retryAfter?: number;

  constructor(code: ErrorCode, message: string, extra: Record<string, unknown> = {}, retryAfter?: number) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.extra = extra;
    this.retryAfter = retryAfter;
  }
}

export const notFound = (what = 'resource') => new AppError('not_found', `${what} not found`);

export const invalidBody = (issues: Issue[]) =>
  new AppError('invalid_body', issues.length === 1 ? issues[0].message : `${issues.length} validation issues`, { issues });

export const invalidRequest = (message: string) => new AppError('invalid_request', message);

export const isAppError = (err: unknown): err is AppError => err instanceof AppError;
