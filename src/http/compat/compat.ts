// The hosted vendors' APIs, each under /compat/<vendor> (an SDK's base URL setting is
// `{publicUrl}/compat/<vendor>`): the vendor's auth style resolved to a Postern key, the same
// rate budgets as /v1, and errors in the vendor's shape so its SDK raises its own error type. A
// path a vendor module does not serve answers that vendor's error shape naming what is served,
// never a 404 page. Each vendor is a thin module (resend.ts, postmark.ts, sendgrid.ts, mailgun.ts) that reads
// its body into Postern sends (email.ts) and writes its answers.
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { AppError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { KeyStore } from '../../workspaces/index.js';
import { errorHandler } from '../errors.js';
import { formBody } from './form.js';

export interface VendorApi {
  /** The path segment under /compat (`resend`). */
  prefix: string;
  /** The vendor's name, as errors name it (`Resend`). */
  name: string;
  /** What is served, listed in the answer to anything else (`POST /emails`, …). */
  supported: string[];
  /** The API key a request carries in the vendor's auth style; undefined when it carries none. */
  key(req: Request): string | undefined;
  /** How its request bodies come: JSON (the default) or a form (Mailgun's). */
  body?: 'json' | 'form';
  /** The vendor's answer to an error. */
  error(err: AppError): { status: number; body: unknown };
  /** Adds the vendor's routes (the key is authenticated and the JSON body parsed before them). */
  routes(r: Router): void;
}

export interface VendorMounts {
  keys: KeyStore;
  log: Logger;
  /** /v1's rate limiter, so a key has one budget whichever API it calls. */
  limit: RequestHandler;
  json: RequestHandler;
  /** http.bodyLimit, for form bodies. */
  bodyLimit: string;
}

export function vendorApis(apis: VendorApi[], deps: VendorMounts): Router {
  const root = Router();
  for (const api of apis) {
    const r = Router();
    r.use(async (req, res, next) => {
      const key = api.key(req);
      if (key === undefined)
        throw new AppError('unauthorized', `no API key: send a Postern API key as ${api.name}'s SDK sends its own`, { key: 'missing' });
      const principal = await deps.keys.authenticate(key);
      if (!principal) throw new AppError('unauthorized', 'invalid or revoked API key', { key: 'invalid' });
      res.locals.principal = principal;
      next();
    });
    r.use(deps.limit);
    if (api.body === 'form') r.use(formBody(deps.bodyLimit));
    else r.use(deps.json, jsonOnly);
    api.routes(r);
    r.use((req) => {
      throw new AppError(
        'not_found',
        `${req.method} ${req.path} is not supported by Postern's ${api.name} API; supported: ${api.supported.join(', ')}`,
      );
    });
    r.use(
      errorHandler(deps.log, (res: Response, err: AppError) => {
        res.locals.errorCode = err.code;
        if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter));
        const { status, body } = api.error(err);
        res.status(status).json(body);
      }),
    );
    root.use(`/compat/${api.prefix}`, r);
  }
  return root;
}

// As on /v1: a body in another format would otherwise read as empty and fail as missing fields.
const jsonOnly: RequestHandler = (req, _res, next) => {
  const length = Number(req.headers['content-length'] ?? 0);
  if ((req.headers['transfer-encoding'] !== undefined || length > 0) && !req.is('application/json'))
    throw new AppError('unsupported_media_type', 'send JSON: the request body must be application/json (Content-Type: application/json)');
  next();
};

/** An AppError's message with its issues, one line (vendors' errors carry a message, not a list). */
export function describe(err: AppError): string {
  const issues = err.extra.issues as { path: string; message: string }[] | undefined;
  if (!issues || issues.length === 0) return err.message;
  return issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ');
}
