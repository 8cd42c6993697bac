// The one JSON body parser of every router that takes JSON (/v1 and /dashboard/api): Express's,
// with the nesting limit checked on the raw bytes before they are parsed (lib/json-depth.ts). The
// bytes are read as UTF-8, so a body in another charset (UTF-16, UTF-32; RFC 8259 §8.1 says JSON
// between systems MUST be UTF-8) is refused as undecodable rather than let past the check.
import express, { type RequestHandler } from 'express';
import { AppError } from '../lib/errors.js';
import { bodyTooDeep, nestsDeeperThan } from '../lib/json-depth.js';

/** Parses a JSON body of at most `limit` (`40mb`, `1mb`), refusing one nested past the limit. */
export function jsonBody(limit: string): RequestHandler {
  return express.json({
    limit,
    verify: (_req, _res, buf, encoding) => {
      if (encoding !== 'utf-8') throw new AppError('invalid_request', `unsupported request body charset ${encoding}: send UTF-8`);
      if (nestsDeeperThan(buf)) throw bodyTooDeep();
    },
  });
}
