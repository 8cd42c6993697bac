// GET /.well-known/mta-sts.txt: the MTA-STS policy file (RFC 8461 §3.2) of each custom domain Postern
// receives for, chosen by the request's host, `mta-sts.<domain>` (port ignored, any case). Public by
// design: a sending MTA fetches it without credentials. Senders fetch it over HTTPS on port 443 only:
// the HTTPS listener serves it with the ACME certificate of mta-sts.<domain>; over plain HTTP it is
// answered too, never redirected, for a TLS-terminating proxy in front (docs/dns.md, "MTA-STS").
// Every node answers the same: the policy is read from the database on each request.
import { Router } from 'express';
import type { MtaStsPolicies } from '../../domains/index.js';
import { AppError } from '../../lib/errors.js';

/** The path senders fetch the policy from; never redirected to HTTPS, so a proxy in front may serve it. */
export const MTA_STS_PATH = '/.well-known/mta-sts.txt';

export function mtaStsRoutes({ policies }: { policies: MtaStsPolicies }): Router {
  const r = Router();
  r.get(MTA_STS_PATH, async (req, res) => {
    // req.hostname: the Host header without its port (X-Forwarded-Host behind a trusted proxy).
    const policy = await policies.forHost(req.hostname ?? '');
    if (!policy) throw new AppError('not_found', 'no MTA-STS policy is served for this host');
    // A cache between the sender and Postern must not keep an old policy: senders cache it by max_age.
    res.setHeader('Cache-Control', 'no-cache');
    res.type('text/plain').send(policy.text);
  });
  return r;
}
