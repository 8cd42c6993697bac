import { Router } from 'express';
import { z } from 'zod';
import type { Doctor } from '../../domains/doctor.js';
import type { DomainStore } from '../../domains/domains.js';
import { AppError } from '../../lib/errors.js';
import { parseBody } from '../../lib/validation.js';
import { allows } from '../../workspaces/scopes.js';
import { principalOf, requireScope } from '../auth.js';

const claimBody = z.strictObject({
  domain: z.string(),
  acknowledgeExistingMx: z.boolean().optional(),
});

export function inboundDomainRoutes({ domains, doctor }: { domains: DomainStore; doctor: Doctor }): Router {
  const r = Router();
  // The checks only read (DNS and the certificate), so a read key may run them as well as an inbound one.
  r.get('/inbound/domains/:id/checks', async (req, res) => {
    const { workspace, scopes } = principalOf(res);
    if (!allows(scopes, 'read') && !allows(scopes, 'inbound'))
      throw new AppError('insufficient_scope', 'this key lacks the read scope', { scope: 'read' });
    res.json(await doctor.domain(workspace.id, req.params.id));
  });
  r.use('/inbound/domains', requireScope('inbound'));
  r.post('/inbound/domains', async (req, res) => {
    const body = parseBody(claimBody, req.body);
    res.status(201).json(await domains.claim(principalOf(res).workspace.id, body));
  });
  r.get('/inbound/domains', async (_req, res) => {
    res.json({ domains: await domains.list(principalOf(res).workspace.id) });
  });
  r.get('/inbound/domains/:id', async (req, res) => {
    res.json(await domains.get(principalOf(res).workspace.id, req.params.id));
  });
  r.delete('/inbound/domains/:id', async (req, res) => {
    await domains.remove(principalOf(res).workspace.id, req.params.id);
    res.json({ deleted: true });
  });
  return r;
}
