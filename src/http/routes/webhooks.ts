// Webhook endpoints (scope webhooks): CRUD, secret rotation, the delivery log and manual retry.
import { Router } from 'express';
import { invalidRequest } from '../../lib/errors.js';
import type { EndpointStore, Owner } from '../../webhooks/index.js';
import { createEndpointSchema, listDeliveriesSchema, updateEndpointSchema } from '../../contract/webhook-schemas.js';
import { parseBody, zodIssues } from '../../lib/validation.js';
import { principalOf, requireScope } from '../auth.js';
import type { Response } from 'express';

const ownerOf = (res: Response): Owner => {
  const p = principalOf(res);
  return { workspaceId: p.workspace.id, livemode: p.livemode };
};

export function webhookRoutes(endpoints: EndpointStore): Router {
  const r = Router();
  r.use('/webhooks', requireScope('webhooks'));

  r.post('/webhooks', async (req, res) => {
    const input = parseBody(createEndpointSchema, req.body);
    const { endpoint, secret } = await endpoints.create(ownerOf(res), input);
    res.status(201).json({ ...endpoint, secret });
  });

  r.get('/webhooks', async (_req, res) => {
    res.json({ data: await endpoints.list(ownerOf(res)) });
  });

  r.get('/webhooks/:id', async (req, res) => {
    res.json(await endpoints.get(ownerOf(res), req.params.id));
  });

  r.patch('/webhooks/:id', async (req, res) => {
    const input = parseBody(updateEndpointSchema, req.body);
    res.json(await endpoints.update(ownerOf(res), req.params.id, input));
  });

  r.delete('/webhooks/:id', async (req, res) => {
    res.json(await endpoints.remove(ownerOf(res), req.params.id));
  });

  r.post('/webhooks/:id/rotate-secret', async (req, res) => {
    const { endpoint, secret } = await endpoints.rotateSecret(ownerOf(res), req.params.id);
    res.json({ ...endpoint, secret });
  });

  r.get('/webhooks/:id/deliveries', async (req, res) => {
    const parsed = listDeliveriesSchema.safeParse(req.query);
    if (!parsed.success)
      throw invalidRequest(
        zodIssues(parsed.error)
          .map((i) => `${i.path}: ${i.message}`)
          .join('; '),
      );
    res.json({ data: await endpoints.deliveries(ownerOf(res), req.params.id, parsed.data) });
  });

  r.post('/webhooks/:id/deliveries/:deliveryId/retry', async (req, res) => {
    res.json(await endpoints.retry(ownerOf(res), req.params.id, req.params.deliveryId));
  });
  return r;
}
