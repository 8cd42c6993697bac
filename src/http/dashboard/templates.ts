// Sending a template test from the editor: always through the test environment, whatever the top
// bar has chosen, so a test never reaches a real recipient's provider. The body goes to the same
// outbound.accept as POST /v1/send (which validates it), with the template's latest version.
import { Router } from 'express';
import { actingOn, answer, auditAs, type DashboardDeps } from './context.js';

export function templateApiRoutes(deps: DashboardDeps): Router {
  const r = Router();
  r.post('/templates/:slug/test-send', async (req, res) => {
    const { workspace } = await actingOn(deps, res);
    const body = (req.body ?? {}) as { to?: unknown; vars?: unknown };
    auditAs(res, 'template.test_send', String(req.params.slug));
    const accepted = await deps.outbound.accept(
      { workspace, livemode: false },
      { template: req.params.slug, to: body.to, vars: body.vars ?? {} },
      { raw: false },
    );
    answer(res, 'POST /dashboard/api/templates/:slug/test-send', accepted, 202);
  });
  return r;
}
