// What only the dashboard does, over the same domain modules the CLI calls: API keys of the chosen
// workspace, workspaces and their plans, operators, the cluster's nodes and the audit log (the last
// four for owners), and the box's sign-in rule.
import { Router } from 'express';
import { z } from 'zod';
import { parseBody } from '../../lib/validation.js';
import { AppError, invalidRequest } from '../../lib/errors.js';
import { actingOn, answer, auditAs, requireOwner, sessionOf, type DashboardDeps } from './context.js';
import { PLANS } from '../../contract/vocabulary.js';

const keyInput = z.object({
  name: z.string().min(1).max(100).optional(),
  env: z.enum(['live', 'test']),
  /** Empty or absent: an unscoped key (full access), as the interface says. */
  scopes: z.array(z.string().max(20)).max(10).optional(),
});
const workspaceInput = z.object({ slug: z.string().max(63), name: z.string().max(200), plan: z.string().max(20).optional() });
const planInput = z.object({ plan: z.string().max(20) });
const operatorInput = z.object({
  email: z.string().max(254),
  password: z.string().max(1024),
  role: z.enum(['owner', 'member']).optional(),
  workspaces: z.array(z.string().max(64)).max(1000).optional(),
});
const securityInput = z.object({ requireSecondFactor: z.boolean() });
const accessInput = z.object({
  role: z.enum(['owner', 'member']).optional(),
  workspaces: z.array(z.string().max(64)).max(1000).optional(),
});

export function adminRoutes(deps: DashboardDeps): Router {
  const r = Router();

  r.get('/keys', async (_req, res) => {
    const { workspace } = await actingOn(deps, res);
    const keys = await deps.keys.list(workspace.id);
    answer(res, 'GET /dashboard/api/keys', { data: keys.reverse() });
  });
  r.post('/keys', async (req, res) => {
    const { workspace, session } = await actingOn(deps, res);
    const body = parseBody(keyInput, req.body);
    // The cluster scope is the box's: an owner may grant it, a member may not (keys.ts refuses).
    const { key, secret } = await deps.keys.create(
      workspace,
      { env: body.env, name: body.name, scopes: body.scopes && body.scopes.length ? body.scopes.join(',') : undefined },
      { boxOwner: session.operator.role === 'owner' },
    );
    auditAs(res, 'key.create', `${key.id} ${key.prefix}`);
    answer(res, 'POST /dashboard/api/keys', { key, secret }, 201);
  });
  r.post('/keys/:id/revoke', async (req, res) => {
    const { workspace } = await actingOn(deps, res);
    auditAs(res, 'key.revoke', req.params.id);
    res.json(await deps.keys.revoke(req.params.id, workspace.id));
  });

  r.get('/workspaces', async (_req, res) => {
    const session = sessionOf(res);
    const all = await deps.workspaces.list();
    answer(res, 'GET /dashboard/api/workspaces', { data: all.filter((w) => deps.operators.mayActOn(session.operator, w.id)) });
  });
  r.get('/plans', (_req, res) => {
    answer(res, 'GET /dashboard/api/plans', { data: [...PLANS] });
  });
  r.post('/workspaces', async (req, res) => {
    requireOwner(res);
    const body = parseBody(workspaceInput, req.body);
    const ws = await deps.workspaces.create(body);
    auditAs(res, 'workspace.create', ws.slug);
    res.status(201).json(ws);
  });
  r.put('/workspaces/:id/plan', async (req, res) => {
    requireOwner(res);
    const body = parseBody(planInput, req.body);
    auditAs(res, 'workspace.plan', `${req.params.id} ${body.plan}`);
    const ws = await deps.workspaces.setPlan(req.params.id, body.plan);
    auditAs(res, 'workspace.plan', `${ws.slug} ${ws.plan}`);
    res.json(ws);
  });

  r.get('/operators', async (_req, res) => {
    requireOwner(res);
    const [operators, enrolled] = await Promise.all([deps.operators.list(), deps.factors.enrolledOperators()]);
    answer(res, 'GET /dashboard/api/operators', { data: operators.map((o) => ({ ...o, secondFactor: enrolled.has(o.id) })) });
  });
  // An operator who lost both the phone and the recovery codes: an owner removes the app, and the
  // operator signs in with the password and sets up a new one.
  r.post('/operators/:id/second-factor/reset', async (req, res) => {
    requireOwner(res);
    const op = await deps.operators.byId(req.params.id);
    auditAs(res, 'operator.second-factor-reset', op.email);
    await deps.factors.reset(op.id);
    res.json({ ...op, secondFactor: false });
  });

  // The box's sign-in rule: whether every operator must have a second factor.
  r.get('/security', async (_req, res) => {
    requireOwner(res);
    answer(res, 'GET /dashboard/api/security', { requireSecondFactor: await deps.factors.required() });
  });
  r.put('/security', async (req, res) => {
    const session = requireOwner(res);
    const body = parseBody(securityInput, req.body);
    auditAs(res, 'security.require-second-factor', String(body.requireSecondFactor));
    if (body.requireSecondFactor && !(await deps.factors.enrolled(session.operator.id))) {
      throw new AppError('conflict', 'set up your own authenticator app before requiring one of every operator');
    }
    await deps.factors.setRequired(body.requireSecondFactor);
    res.json({ requireSecondFactor: body.requireSecondFactor });
  });
  r.post('/operators', async (req, res) => {
    requireOwner(res);
    const body = parseBody(operatorInput, req.body);
    const op = await deps.operators.create(body);
    auditAs(res, 'operator.create', `${op.email} ${op.role}`);
    res.status(201).json(op);
  });
  r.put('/operators/:id/access', async (req, res) => {
    requireOwner(res);
    const body = parseBody(accessInput, req.body);
    const op = await deps.operators.setAccess(req.params.id, body);
    auditAs(res, 'operator.access', `${op.email} ${op.role}`);
    res.json(op);
  });
  r.delete('/operators/:id', async (req, res) => {
    requireOwner(res);
    const op = await deps.operators.byId(req.params.id);
    auditAs(res, 'operator.remove', op.email);
    await deps.operators.remove(op.email);
    res.json({ removed: true });
  });

  // The nodes sharing the database (cluster/nodes.ts): the box's, not a workspace's.
  r.get('/nodes', async (_req, res) => {
    requireOwner(res);
    const { heartbeat, nodeTimeout } = deps.config.cluster;
    answer(res, 'GET /dashboard/api/nodes', { data: await deps.nodes.list(), heartbeatMs: heartbeat, nodeTimeoutMs: nodeTimeout });
  });

  r.get('/audit', async (req, res) => {
    requireOwner(res);
    const before = req.query.before === undefined ? undefined : Number(req.query.before);
    if (before !== undefined && !Number.isInteger(before)) throw invalidRequest('before must be an audit entry id');
    const limit = req.query.limit === undefined ? undefined : Number(req.query.limit);
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 500)) throw invalidRequest('limit must be 1-500');
    answer(
      res,
      'GET /dashboard/api/audit',
      await deps.audit.list({ before, limit, operator: typeof req.query.operator === 'string' ? req.query.operator : undefined }),
    );
  });
  return r;
}
