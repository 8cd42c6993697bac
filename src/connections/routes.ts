import { Router } from 'express';
import type { Config } from '../config.js';
import { emailConnectionView } from '../outbound/channels/email/index.js';
import { principalOf, requireScope } from '../http/auth.js';
import type { ConnectionStore } from './store.js';
import { connectionView } from './view.js';

/** GET /v1/connections: the configured email connection and the workspace's stored ones for the key's environment, never secrets. */
export function connectionRoutes(connections: ConnectionStore, config: Config): Router {
  const r = Router();
  r.get('/connections', requireScope('read'), async (_req, res) => {
    const p = principalOf(res);
    const list = await connections.list(p.workspace.id, { env: p.env });
    res.json({ data: [emailConnectionView(config, p.env), ...list.map(connectionView)] });
  });
  return r;
}
