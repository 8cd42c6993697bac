// Destinations (docs/api/destinations.md): what the workspace's email to each destination domain
// came to, and the operator's levers when a destination blocklists the box. GET (scope read) lists
// and shows the counts, the last error, a hold and a back-off; suspend and resume (scope send) hold
// and release the workspace's own mail there; purge (scope cancel) drops what still waits for it.
// The box-wide levers (every workspace) are the operator's: `postern queue …`.
import { Router, type Request } from 'express';
import type { Destinations } from '../../channels/email/index.js';
import { destinationsQuery, purgeBody, suspendBody } from '../../contract/destination-schemas.js';
import type { Db } from '../../db/index.js';
import { isDomainName, normalizeDomain } from '../../domains/index.js';
import type { Clock } from '../../lib/clock.js';
import { invalidRequest } from '../../lib/errors.js';
import { parseBody, zodIssues } from '../../lib/validation.js';
import type { Ledger } from '../../messages/index.js';
import { purgeDestination, releaseDeferredTo } from '../../outbound/index.js';
import { principalOf, requireScope } from '../auth.js';

export interface DestinationRoutesDeps {
  destinations: Destinations;
  db: Db;
  ledger: Ledger;
  clock: Clock;
  /** Wakes the dispatcher (released mail is due now). */
  wake(): void;
}

function domainOf(req: Request): string {
  const d = normalizeDomain(String(req.params.domain));
  if (!isDomainName(d)) throw invalidRequest(`domain: ${String(req.params.domain)} is not a domain name`);
  return d;
}

export function destinationRoutes(deps: DestinationRoutesDeps): Router {
  const { destinations } = deps;
  const r = Router();
  const ws = (res: Parameters<typeof principalOf>[0]) => principalOf(res).workspace.id;

  r.get('/destinations', requireScope('read'), async (req, res) => {
    const q = destinationsQuery.safeParse(req.query);
    if (!q.success)
      throw invalidRequest(
        zodIssues(q.error)
          .map((i) => `${i.path}: ${i.message}`)
          .join('; '),
      );
    const limit = q.data.limit ?? 50;
    const data = await destinations.list(ws(res), { limit, after: q.data.after });
    res.json({ data, next: data.length === limit ? data[data.length - 1].domain : null });
  });

  r.get('/destinations/:domain', requireScope('read'), async (req, res) => {
    res.json(await destinations.get(ws(res), domainOf(req)));
  });

  r.post('/destinations/:domain/suspend', requireScope('send'), async (req, res) => {
    const domain = domainOf(req);
    const body = parseBody(suspendBody, req.body ?? {});
    await destinations.suspend(ws(res), domain, body.reason ?? 'suspended through the API');
    res.json(await destinations.get(ws(res), domain));
  });

  r.post('/destinations/:domain/resume', requireScope('send'), async (req, res) => {
    const domain = domainOf(req);
    await destinations.resume(ws(res), domain);
    // What the hold deferred is due now, unless an operator's hold for everyone still stands.
    const view = await destinations.get(ws(res), domain);
    if (view.suspended === null) {
      await releaseDeferredTo(deps.db, domain, ws(res), deps.clock.now().toISOString());
      deps.wake();
    }
    res.json(view);
  });

  r.post('/destinations/:domain/purge', requireScope('cancel'), async (req, res) => {
    const domain = domainOf(req);
    const body = parseBody(purgeBody, req.body ?? {});
    res.json(
      await purgeDestination(deps.db, deps.ledger, {
        domain,
        workspaceId: ws(res),
        statuses: body.status ? [body.status] : ['queued', 'deferred'],
        now: deps.clock.now().toISOString(),
        why: `the queue for ${domain} was purged through the API`,
      }),
    );
  });
  return r;
}
