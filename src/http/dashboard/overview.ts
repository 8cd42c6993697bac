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
//   warnings: [{ kind: 'unverified_domain' | 'failed_domain' | 'dns_mismatch' | 'bounce_rate' | 'certificate' | 'dkim_rotation', message }]
// }
// Windows count messages accepted in the window by their status now; bounced and complained are
// suppressions added in the window to the environment's list (a test key's simulated bounces count
// in test only).
import { Router } from 'express';
import { createOverview } from '../../workspaces/index.js';
import type { CertificateProblem } from '../../certificates/index.js';
import { actingOn, answer, type DashboardDeps } from './context.js';

function certificateWarning(p: CertificateProblem): string {
  if (p.kind === 'expired')
    return `The certificate for ${p.name} expired on ${p.notAfter}; renewing it failed: ${p.error ?? 'no attempt yet'}`;
  const served = p.notAfter ? `the current one is valid until ${p.notAfter}` : 'smtp.tlsCert or the self-signed one is served meanwhile';
  return `Obtaining the certificate for ${p.name} failed ${p.failures} time${p.failures === 1 ? '' : 's'} (${served}): ${p.error ?? ''}`;
}

export function overviewRoutes(deps: DashboardDeps): Router {
  const r = Router();
  const overview = createOverview(deps);
  r.get('/overview', async (_req, res) => {
    const { workspace, env } = await actingOn(deps, res);
    const read = await overview.read(workspace, env, deps.clock.now());
    // The box's certificates (ACME) concern every workspace: HTTPS and STARTTLS serve them all.
    const problems = (await deps.certificateProblems?.().catch(() => [])) ?? [];
    for (const p of problems) read.warnings.push({ kind: 'certificate', message: certificateWarning(p) });
    answer(res, 'GET /dashboard/api/overview', read);
  });
  return r;
}
