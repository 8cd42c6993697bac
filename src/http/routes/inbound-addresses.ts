import { Router } from 'express';
import { z } from 'zod';
import type { AddressStore } from '../../inbound/addresses.js';
import { principalOf, requireScope } from '../auth.js';
import { parseBody } from '../../lib/validation.js';

export const createAddressBody = z.strictObject({
  localPart: z.string().min(1).max(64).optional(),
  description: z.string().max(200).optional(),
  forwardTo: z.string().max(320).nullable().optional(),
  webhookEndpointId: z.string().min(1).max(100).nullable().optional(),
  domainId: z.string().min(1).max(100).optional(),
  livemode: z.boolean().optional(),
});

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
