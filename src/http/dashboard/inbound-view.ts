// Received mail's HTML, served alone for the sandboxed iframe of the message detail. Received mail
// is hostile: the stored HTML is the sender's, as sent, made safe by how it is served
// (isolated-html.ts); remote images load only when the operator asks (imageSourcesAsked).
import { Router } from 'express';
import { actingOn, type DashboardDeps } from './context.js';
import { imageSourcesAsked, sendIsolatedHtml } from './isolated-html.js';

export function inboundViewRoutes(deps: DashboardDeps): Router {
  const r = Router();
  r.get('/inbound/:id', async (req, res) => {
    const { workspace, env } = await actingOn(deps, res);
    const message = await deps.received.detail(workspace.id, env === 'live', req.params.id);
    sendIsolatedHtml(res, message.html || '<p>(This message has no HTML part.)</p>', imageSourcesAsked(req.query));
  });
  return r;
}
