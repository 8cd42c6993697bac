// /v1/suppressions: the suppression list of the key's workspace and environment (a test key's list
// holds only test sends, a live key's only live ones). GET (scope read) lists entries newest first
// (`limit` 1–200, default 50; `cursor` the `nextCursor` of the previous page; `before` an ISO
// timestamp, the older way to page, which skips entries sharing the boundary millisecond; `reason`
// filter; `q` a part of the address);
// POST (scope send) adds `{address, reason?: manual}`; DELETE /v1/suppressions/{address} (scope send)
// removes one, after which sends to the address go out again.
import { Router, type Response } from 'express';
import { AppError, notFound } from '../../lib/errors.js';
import { parseBody, zodIssues } from '../../lib/validation.js';
import {
  addSuppressionBody,
  listSuppressionsQuery,
  decodePosition,
  encodePosition,
  positionOf,
  type ListScope,
  type SuppressionStore,
} from '../../suppressions/store.js';
import { principalOf, requireScope } from '../auth.js';

const scopeOf = (res: Response): ListScope => {
  const p = principalOf(res);
  return { workspaceId: p.workspace.id, livemode: p.livemode };
};

export function suppressionRoutes(store: SuppressionStore): Router {
  const r = Router();
  r.get('/suppressions', requireScope('read'), async (req, res) => {
    const q = listSuppressionsQuery.safeParse(req.query);
    if (!q.success)
      throw new AppError(
        'invalid_request',
        zodIssues(q.error)
          .map((i) => `${i.path}: ${i.message}`)
          .join('; '),
      );
    const after = q.data.cursor === undefined ? null : decodePosition(q.data.cursor);
    if (q.data.cursor !== undefined && !after) throw new AppError('invalid_request', 'cursor: not a cursor this list gave out');
    const data = await store.list(scopeOf(res), { ...q.data, after, search: q.data.q });
    const more = data.length === q.data.limit;
    res.json({
      data,
      nextCursor: more ? encodePosition(positionOf(data[data.length - 1])) : null,
      nextBefore: more ? data[data.length - 1].createdAt : null,
    });
  });
  r.post('/suppressions', requireScope('send'), async (req, res) => {
    const body = parseBody(addSuppressionBody, req.body);
    const entry = await store.add(scopeOf(res), body);
    res.status(201).json(entry);
  });
  r.delete('/suppressions/:address', requireScope('send'), async (req, res) => {
    const address = String(req.params.address);
    if (!(await store.remove(scopeOf(res), address))) throw notFound(`suppression ${address}`);
    res.json({ address: address.toLowerCase(), deleted: true });
  });
  return r;
}
