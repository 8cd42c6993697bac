// GET /v1/connections (scope read): the configured email connection and the workspace's stored
// provider connections for the key's environment, never their secrets.
import { Router } from 'express';
import { type ConnectionStore, connectionView } from '../../channels/index.js';
import { emailConnectionView } from '../../channels/email/index.js';
import type { Config } from '../../config.js';
import { principalOf, requireScope } from '../auth.js';

export function connectionRoutes(connections: ConnectionStore, config: Config): Router {
  const r = Router();
  r.get('/connections', requireScope('read'), async (_req, res) => {
    const p = principalOf(res);
    const list = await connections.list(p.workspace.id, { env: p.env });
    res.json({ data: [emailConnectionView(config, p.env), ...list.map(connectionView)] });
  });
  return r;
}
