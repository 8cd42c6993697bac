// SMTP credentials (scope send): create one (its secret answered once), list them, revoke one. The
// workspace and environment are the key's: a test key makes and sees test credentials only. The
// scope is `send` because a credential can do no more than a send-scoped key (submit mail), so a
// key that may send may hand that power to an SMTP client, and no other key may.
import { Router, type Response } from 'express';
import { parseBody } from '../../lib/validation.js';
import { createSmtpCredentialBody } from '../../contract/smtp-credential-schemas.js';
import type { SmtpCredentialStore } from '../../submission/index.js';
import { principalOf, requireScope } from '../auth.js';

const ownerOf = (res: Response) => {
  const p = principalOf(res);
  return { workspaceId: p.workspace.id, env: p.env };
};

export function smtpCredentialRoutes(store: SmtpCredentialStore): Router {
  const r = Router();
  r.use('/smtp-credentials', requireScope('send'));

  r.post('/smtp-credentials', async (req, res) => {
    const input = parseBody(createSmtpCredentialBody, req.body);
    const owner = ownerOf(res);
    const { credential, secret } = await store.create({ id: owner.workspaceId }, { env: owner.env, description: input.description });
    res.status(201).json({ ...credential, secret });
  });

  r.get('/smtp-credentials', async (_req, res) => {
    const owner = ownerOf(res);
    res.json({ data: await store.list(owner.workspaceId, owner.env) });
  });

  r.delete('/smtp-credentials/:id', async (req, res) => {
    res.json(await store.revoke(req.params.id, ownerOf(res)));
  });
  return r;
}
