import { Router } from 'express';
import { principalOf, requireScope } from '../auth.js';

export function contextRoutes(): Router {
  const r = Router();
  r.get('/context', requireScope('read'), (_req, res) => {
    const p = principalOf(res);
    res.json({ workspace: { id: p.workspace.id, slug: p.workspace.slug, name: p.workspace.name }, mode: p.env });
  });
  return r;
}
