import { Router } from 'express';
import { createAddressBody } from '../../contract/inbound-schemas.js';
import type { AddressStore } from '../../inbound/index.js';
import { principalOf, requireScope } from '../auth.js';
import { parseBody } from '../../lib/validation.js';

export function inboundAddressRoutes({ addresses }: { addresses: AddressStore }): Router {
  const r = Router();
  r.use('/inbound/addresses', requireScope('inbound'));
  r.post('/inbound/addresses', async (req, res) => {
    const body = parseBody(createAddressBody, req.body);
    res.status(201).json(await addresses.create(principalOf(res).workspace, body));
  });
  r.get('/inbound/addresses', async (req, res) => {
    const domainId = typeof req.query.domainId === 'string' ? req.query.domainId : undefined;
    res.json({ addresses: await addresses.list(principalOf(res).workspace, domainId) });
  });
  r.post('/inbound/addresses/:id/deactivate', async (req, res) => {
    res.json(await addresses.deactivate(principalOf(res).workspace.id, req.params.id));
  });
  return r;
}
