// Adding and removing provider connections from the dashboard, through the same connection store
// the CLI uses (validation, sealing of secrets and the SSRF check all live there). The providers'
// setting specs are served so the page builds its form from them. Credentials are write-only:
// every answer is the store's public view, which names the secrets that are set, never their values.
import { Router } from 'express';
import { z } from 'zod';
import { connectionView, PROVIDERS } from '../../channels/index.js';
import { invalidBody, notFound } from '../../lib/errors.js';
import { actingOn, answer, auditAs, type DashboardDeps } from './context.js';

const addInput = z.object({
  channel: z.string().max(20),
  provider: z.string().max(40),
  name: z.string().max(200).optional(),
  values: z.record(z.string().max(100), z.string().max(20_000)).default({}),
});

export function connectionRoutes(deps: DashboardDeps): Router {
  const r = Router();

  r.get('/connections/providers', (_req, res) => {
    answer(res, 'GET /dashboard/api/connections/providers', {
      data: PROVIDERS.map((p) => ({
        channel: p.channel,
        name: p.name,
        settings: p.settings.map((s) => ({
          name: s.name,
          secret: Boolean(s.secret),
          required: Boolean(s.required),
          default: s.default ?? null,
          multiline: Boolean(s.file),
          kind: s.kind ?? null,
          describe: s.describe,
        })),
      })),
    });
  });

  r.post('/connections', async (req, res) => {
    const { workspace, env } = await actingOn(deps, res);
    const parsed = addInput.safeParse(req.body ?? {});
    if (!parsed.success) throw invalidBody(parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })));
    const body = parsed.data;
    // Empty fields are "not given", so an optional setting takes its default.
    const values = Object.fromEntries(Object.entries(body.values).filter(([, v]) => v !== ''));
    const conn = await deps.connections.add({
      workspaceId: workspace.id,
      env,
      channel: body.channel,
      provider: body.provider,
      name: body.name || undefined,
      values,
    });
    auditAs(res, 'connection.add', `${conn.id} ${conn.channel} ${conn.provider} ${env}`);
    res.status(201).json(connectionView(conn));
  });

  r.delete('/connections/:id', async (req, res) => {
    const { workspace, env } = await actingOn(deps, res);
    const mine = await deps.connections.list(workspace.id, { env });
    if (!mine.some((c) => c.id === req.params.id)) throw notFound('connection');
    auditAs(res, 'connection.remove', req.params.id);
    const conn = await deps.connections.remove(req.params.id);
    res.json({ id: conn.id, removed: true });
  });
  return r;
}
