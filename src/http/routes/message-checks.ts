// GET /v1/messages/{id}/checks: the message's last checks (HTML compatibility, links, spam score,
// headers), run now when it has none; POST /v1/messages/{id}/checks runs them again. Both need the
// read scope: a check reads the message and changes nothing about it (outbound/checks/checks.ts).
import { Router } from 'express';
import type { MessageCheckService } from '../../outbound/index.js';
import { principalOf, requireScope } from '../auth.js';

export function messageCheckRoutes(checks: MessageCheckService): Router {
  const r = Router();
  r.get('/messages/:id/checks', requireScope('read'), async (req, res) => {
    const p = principalOf(res);
    res.json(await checks.get({ workspaceId: p.workspace.id, livemode: p.livemode }, String(req.params.id)));
  });
  r.post('/messages/:id/checks', requireScope('read'), async (req, res) => {
    const p = principalOf(res);
    res.json(await checks.run({ workspaceId: p.workspace.id, livemode: p.livemode }, String(req.params.id)));
  });
  return r;
}
