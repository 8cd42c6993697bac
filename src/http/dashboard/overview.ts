// GET /dashboard/api/overview: the Overview page's figures for the workspace and environment the
// session acts on, read by workspaces/overview.ts (the queries and their indexes are explained in
// messages/stats.ts). The benchmark times this path on a workspace with 1 million messages.
//
// Response (200, JSON):
// {
//   generatedAt: ISO,
//   workspace: { id, slug, name, plan }, env: 'live' | 'test',
//   windows: { '24h' | '7d': { accepted, sent, delivered, deferred, failed, bounced, complained,
//                              optedOut, suppressed, blocked, canceled, bounceRate: number | null } },
//   daily: [{ day: 'YYYY-MM-DD', delivered, sent, failed, other }]   // 7 UTC days, oldest first
//   queue: { scheduled, queued, rendered, deferred, inFlight, oldestReadyAt: ISO | null,
//            oldestReadyAgeSeconds: number | null },
//   inbound: { '24h': number, '7d': number },
//   webhooks: { failing: [{ id: 'whk_…', url, failingSince: ISO | null, disabled, disabledReason }] },
//   quota: { messages: { used, limit: number | null } | null, inbound: … | null,
//            senderCaps: [{ tier: 'shared' | 'domain', period: 'day' | 'month', used, limit }] },
//   warnings: [{ kind: 'unverified_domain' | 'failed_domain' | 'bounce_rate', message }]
// }
// Windows count messages accepted in the window by their status now; bounced and complained are
// suppressions added in the window to the environment's list (a test key's simulated bounces count
// in test only).
import { Router } from 'express';
import { createOverview } from '../../workspaces/overview.js';
import { actingOn, type DashboardDeps } from './context.js';

export function overviewRoutes(deps: DashboardDeps): Router {
  const r = Router();
  const overview = createOverview(deps);
  r.get('/overview', async (_req, res) => {
    const { workspace, env } = await actingOn(deps, res);
    res.json(await overview.read(workspace, env, deps.clock.now()));
  });
  return r;
}
