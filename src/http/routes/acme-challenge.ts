// GET /.well-known/acme-challenge/:token: the HTTP-01 key authorization (RFC 8555 §8.3) the CA asks
// for while Postern obtains a certificate. Public by design, over plain HTTP on port 80, and
// answered by every node from the database, wherever the CA's request lands.
import { Router } from 'express';
import { AppError } from '../../lib/errors.js';

/** The path HTTP-01 validation fetches; never redirected to HTTPS (http/server.ts). */
export const ACME_CHALLENGE_PATH = '/.well-known/acme-challenge/';

export function acmeChallengeRoutes({ challenge }: { challenge: (token: string) => Promise<string | null> }): Router {
  const r = Router();
  r.get(`${ACME_CHALLENGE_PATH}:token`, async (req, res) => {
    const token = String(req.params.token);
    const keyAuthorization = /^[A-Za-z0-9_-]{1,256}$/.test(token) ? await challenge(token) : null;
    if (!keyAuthorization) throw new AppError('not_found', 'no ACME challenge is under way for this token');
    res.setHeader('Cache-Control', 'no-store');
    res.type('text/plain').send(keyAuthorization);
  });
  return r;
}
