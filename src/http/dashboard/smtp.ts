// The dashboard's SMTP page: the settings an application needs to submit mail (host, ports, TLS,
// user names) and the SMTP credentials of the chosen workspace, listed, created (the secret
// answered once) and revoked over the same store the CLI and /v1/smtp-credentials use.
import { Router } from 'express';
import { z } from 'zod';
import { parseBody } from '../../lib/validation.js';
import { DESCRIPTION_MAX } from '../../contract/smtp-credential-schemas.js';
import { GENERIC_USER } from '../../submission/index.js';
import { actingOn, answer, auditAs, type DashboardDeps } from './context.js';

const credentialInput = z.strictObject({
  env: z.enum(['live', 'test']),
  description: z.string().max(DESCRIPTION_MAX).optional(),
});

export function smtpRoutes(deps: DashboardDeps): Router {
  const r = Router();

  r.get('/smtp/settings', async (_req, res) => {
    const { workspace } = await actingOn(deps, res);
    const ports = deps.submissionPorts();
    answer(res, 'GET /dashboard/api/smtp/settings', {
      enabled: ports !== null,
      host: deps.config.hostname,
      starttlsPort: ports?.port ?? null,
      tlsPort: ports?.tlsPort ?? null,
      usernames: [GENERIC_USER, workspace.slug],
    });
  });
  r.get('/smtp/credentials', async (_req, res) => {
    const { workspace } = await actingOn(deps, res);
    answer(res, 'GET /dashboard/api/smtp/credentials', { data: await deps.smtpCredentials.list(workspace.id) });
  });
  r.post('/smtp/credentials', async (req, res) => {
    const { workspace } = await actingOn(deps, res);
    const body = parseBody(credentialInput, req.body);
    const { credential, secret } = await deps.smtpCredentials.create(workspace, body);
    auditAs(res, 'smtp-credential.create', `${credential.id} ${credential.username}`);
    answer(res, 'POST /dashboard/api/smtp/credentials', { credential, secret }, 201);
  });
  r.post('/smtp/credentials/:id/revoke', async (req, res) => {
    const { workspace } = await actingOn(deps, res);
    auditAs(res, 'smtp-credential.revoke', req.params.id);
    res.json(await deps.smtpCredentials.revoke(req.params.id, { workspaceId: workspace.id }));
  });
  return r;
}
