// Authentication and scopes: one middleware resolves the bearer key to a Principal; routes declare
// the scope they need with requireScope().
import type { Request, RequestHandler, Response } from 'express';
import { AppError } from '../lib/errors.js';
import { allows, type KeyStore, type Principal } from '../workspaces/index.js';
import type { Scope } from '../contract/vocabulary.js';

/** Resolves a request without an Authorization header by other means (the dashboard's session). */
export type OtherAuth = (req: Request, res: Response) => Promise<Principal | null>;

/** The key of an `Authorization: Bearer <key>` header; undefined when there is none or it is malformed. */
export function bearerKey(header: string | undefined): string | undefined {
  return header ? /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1] : undefined;
}

export function authenticate(keys: KeyStore, other?: OtherAuth): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers.authorization;
    if (header === undefined && other) {
      const principal = await other(req, res);
      if (principal) {
        res.locals.principal = principal;
        return next();
      }
    }
    const key = bearerKey(header);
    if (key === undefined) throw new AppError('unauthorized', 'missing or malformed Authorization header; expected Bearer <API key>');
    const principal = await keys.authenticate(key);
    if (!principal) throw new AppError('unauthorized', 'invalid or revoked API key');
    res.locals.principal = principal;
    next();
  };
}

export function requireScope(scope: Scope): RequestHandler {
  return (_req, res, next) => {
    if (!allows(principalOf(res).scopes, scope)) {
      throw new AppError('insufficient_scope', `this key lacks the ${scope} scope`, { scope });
    }
    next();
  };
}

/** The authenticated principal of a request that passed authenticate(). */
export function principalOf(res: Response): Principal {
  return res.locals.principal as Principal;
}
