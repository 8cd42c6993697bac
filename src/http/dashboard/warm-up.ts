// The dashboard's Warm-up page (owners: source addresses are the box's): each source with its
// EHLO name and pools, who is assigned which pool, and each (source, sending domain) schedule of
// warm-up — today's allowance, what is used of it, the next step and why the ramp is paused.
import { Router } from 'express';
import { answer, requireOwner, type DashboardDeps } from './context.js';

export function warmUpRoutes(deps: Pick<DashboardDeps, 'config' | 'warmUp'>): Router {
  const r = Router();
  r.get('/warm-up', async (_req, res) => {
    requireOwner(res);
    const d = deps.config.delivery;
    const sources = Object.entries(d.sources).map(([name, s]) => ({
      name,
      address: s.address,
      ehlo: s.ehlo,
      pools: Object.entries(d.pools)
        .filter(([, members]) => members.includes(name))
        .map(([pool]) => pool),
      warmingUp: d.warmUp.enabled && (d.warmUp.sources.length === 0 || d.warmUp.sources.includes(name)),
    }));
    answer(res, 'GET /dashboard/api/warm-up', {
      enabled: d.warmUp.enabled,
      curve: d.warmUp.curve,
      sources,
      assignment: d.poolAssignment,
      addressFamily: d.addressFamily,
      data: deps.warmUp ? await deps.warmUp.list() : [],
    });
  });
  return r;
}
