// GET /v1/nodes (scope cluster): the nodes sharing the database, each with its health, its
// deliveries in flight and the messages it has claimed. The nodes are the box's, not a workspace's:
// the `cluster` scope is never part of an unscoped key's access (workspaces/scopes.ts).
import { Router } from 'express';
import type { NodeRegistry } from '../../cluster/index.js';
import type { Config } from '../../config.js';
import { requireScope } from '../auth.js';

export function nodeRoutes(nodes: Pick<NodeRegistry, 'list'>, config: Pick<Config, 'cluster'>): Router {
  const r = Router();
  r.get('/nodes', requireScope('cluster'), async (_req, res) => {
    res.json({ data: await nodes.list(), heartbeatMs: config.cluster.heartbeat, nodeTimeoutMs: config.cluster.nodeTimeout });
  });
  return r;
}
