// /v1/suppressions: the workspace's suppression list. GET (scope read) lists entries newest first
// (`limit` 1–200, default 50; `before` an ISO timestamp for the next page; `reason` filter);
// POST (scope send) adds `{address, reason?: manual}`; DELETE /v1/suppressions/{address} (scope send)
// removes one, after which sends to the address go out again.
import { Router } from 'express';
import { z } from 'zod';
import { AppError, notFound } from '../../lib/errors.js';
import { parseBody, zodIssues } from '../../lib/validation.js';
import { SUPPRESSION_REASONS, type SuppressionStore } from '../../suppressions/store.js';
import { principalOf, requireScope } from '../auth.js';

const addBody = z.strictObject({
  address: z.email().max(320),
  reason: z.enum(SUPPRESSION_REASONS).default('manual'),
  detail: z.string().max(500).optional(),
});

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.iso.datetime({ offset: true }).optional(),
  reason: z.enum(SUPPRESSION_REASONS).optional(),
});

export function suppressionRoutes(store: SuppressionStore): Router {
  const r = Router();
  r.get('/suppressions', requireScope('read'), async (req, res) => {
    const q = listQuery.safeParse(req.query);
    if (!q.success)
      throw new AppError(
        'invalid_request',
        zodIssues(q.error)
          .map((i) => `${i.path}: ${i.message}`)
          .join('; '),
      );
    const data = await store.list(principalOf(res).workspace.id, q.data);
    res.json({ data, nextBefore: data.length === q.data.limit ? data[data.length - 1].createdAt : null });
  });
  r.post('/suppressions', requireScope('send'), async (req, res) => {
    const body = parseBody(addBody, req.body);
    const entry = await store.add(principalOf(res).workspace.id, body);
    res.status(201).json(entry);
  });
  r.delete('/suppressions/:address', requireScope('send'), async (req, res) => {
    const address = String(req.params.address);
    if (!(await store.remove(principalOf(res).workspace.id, address))) throw notFound(`suppression ${address}`);
    res.json({ address: address.toLowerCase(), deleted: true });
  });
  return r;
}
