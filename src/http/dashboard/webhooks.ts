// The delivery log beyond what /v1 shows: the request a delivery POSTs (URL, headers and the exact
// body), built by the endpoint store from the stored event the way the deliverer builds it.
import { Router } from 'express';
import { actingOn, answer, type DashboardDeps } from './context.js';

export function webhookViewRoutes(deps: DashboardDeps): Router {
  const r = Router();
  r.get('/webhooks/:id/deliveries/:deliveryId/request', async (req, res) => {
    const { workspace, env } = await actingOn(deps, res);
    const owner = { workspaceId: workspace.id, livemode: env === 'live' };
    answer(
      res,
      'GET /dashboard/api/webhooks/:id/deliveries/:deliveryId/request',
      await deps.webhooks.request(owner, req.params.id, req.params.deliveryId),
    );
  });
  return r;
}
