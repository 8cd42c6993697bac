import { Router } from 'express';
import type { Doctor, DomainStore } from '../../domains/index.js';
import { claimDomainBody, rotateDkimBody } from '../../contract/domain-schemas.js';
import { parseBody } from '../../lib/validation.js';
import { principalOf, requireScope } from '../auth.js';

export function inboundDomainRoutes({ domains, doctor }: { domains: DomainStore; doctor: Doctor }): Router {
  const r = Router();
  r.use('/inbound/domains', requireScope('inbound'));
  r.post('/inbound/domains', async (req, res) => {
    const body = parseBody(claimDomainBody, req.body);
    res.status(201).json(await domains.claim(principalOf(res).workspace.id, body));
  });
  r.get('/inbound/domains', async (_req, res) => {
    res.json({ domains: await domains.list(principalOf(res).workspace.id) });
  });
  r.get('/inbound/domains/:id', async (req, res) => {
    res.json(await domains.get(principalOf(res).workspace.id, req.params.id));
  });
  // The doctor's checks of one domain (docs/doctor.md): they only read, under the same scope as the domain.
  r.get('/inbound/domains/:id/checks', async (req, res) => {
    res.json(await doctor.domain(principalOf(res).workspace.id, req.params.id));
  });
  // A DKIM key rotation on demand (domains/dkim-rotation.ts): the new records come back to publish.
  r.post('/inbound/domains/:id/dkim/rotate', async (req, res) => {
    const body = parseBody(rotateDkimBody, req.body ?? {});
    res.json(await domains.rotateDkim(principalOf(res).workspace.id, req.params.id, body));
  });
  r.delete('/inbound/domains/:id/dkim/rotation', async (req, res) => {
    res.json(await domains.cancelDkimRotation(principalOf(res).workspace.id, req.params.id));
  });
  r.delete('/inbound/domains/:id', async (req, res) => {
    await domains.remove(principalOf(res).workspace.id, req.params.id);
    res.json({ deleted: true });
  });
  return r;
}
