// The link from a received message to the outbound message that forwards it (scope inbound).
import { Router } from 'express';
import type { Forwarding } from '../../forwarding/index.js';
import { principalOf, requireScope } from '../auth.js';

export function forwardingRoutes(forwarding: Forwarding): Router {
  const r = Router();
  r.get('/inbound/messages/:id/forward', requireScope('inbound'), async (req, res) => {
    const p = principalOf(res);
    res.json(await forwarding.forwardOf({ workspaceId: p.workspace.id, livemode: p.livemode }, String(req.params.id)));
  });
  return r;
}
