import { Router } from 'express';
import { principalOf, requireScope } from '../http/auth.js';
import type { ConnectionStore } from './store.js';
import { connectionView } from './view.js';

/** GET /v1/connections: the workspace's connections for the key's environment, never secrets. */
export function connectionRoutes(connections: ConnectionStore): Router {
  const r = Router();
  r.get('/connections', requireScope('read'), async (_req, res) => {
    const p = principalOf(res);
    const list = await connections.list(p.workspace.id, { env: p.env });
    res.json({ data: list.map(connectionView) });
  });
  return r;
}
