// GET /v1/messages (list, or with tail=1 a Server-Sent Events stream), GET /v1/messages/{id} and
// DELETE /v1/messages/{id}, POST /v1/messages/{id}/retry. A tail writes the 50 most recent matching messages (oldest first), then
// every new or changed matching message as the message ledger announces it: one
// subscription per client, no polling. Framing: `event: message`, `id: <msg_ id>`,
// `data: <Message JSON>`; a `: ping` comment every `tail.ping`; the server ends the stream
// after `tail.maxDuration` and when the daemon stops.
import { Router, type Request } from 'express';
import type { Config } from '../../config.js';
import type { EventBus } from '../../events/index.js';
import { type Ledger, type ListFilters, matchesFilters } from '../../messages/index.js';
import { AppError, invalidRequest } from '../../lib/errors.js';
import { STATUS_FILTERS as STATUSES, type StatusFilter } from '../../contract/messages.js';
import type { Outbound } from '../../outbound/index.js';
import { principalOf, requireScope } from '../auth.js';
import { CHANNELS, type Channel } from '../../contract/channels.js';
import type { Message } from '../../contract/message-schemas.js';

const one = (v: unknown, name: string): string | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalidRequest(`${name} must be given once, as a string`);
  return v;
};

function parseFilters(req: Request): ListFilters & { tail: boolean } {
  const q = req.query;
  const limitText = one(q.limit, 'limit');
  const limit = limitText === undefined ? 50 : Number(limitText);
  if (!/^\d+$/.test(limitText ?? '50') || limit < 1 || limit > 200) throw invalidRequest('limit must be an integer from 1 to 200');
  const status = one(q.status, 'status');
  if (status !== undefined && !STATUSES.includes(status as StatusFilter))
    throw invalidRequest(`unknown status ${status}; statuses are ${STATUSES.join(', ')} (deferred: dispatched and waiting to be retried)`);
  const channel = one(q.channel, 'channel');
  if (channel !== undefined && !CHANNELS.includes(channel as Channel))
    throw invalidRequest(`unknown channel ${channel}; channels are ${CHANNELS.join(', ')}`);
  const search = one(q.q, 'q');
  if (search !== undefined && search.length > 512) throw invalidRequest('q must be at most 512 characters');
  if (search !== undefined && /[\u0000-\u001f\u007f]/.test(search)) throw invalidRequest('q must not contain control characters');
  let metadata: Record<string, string> | undefined;
  if (q.metadata !== undefined) {
    if (typeof q.metadata !== 'object' || Array.isArray(q.metadata))
      throw invalidRequest('metadata filters are given as metadata[key]=value');
    metadata = {};
    for (const [k, v] of Object.entries(q.metadata as Record<string, unknown>)) metadata[k] = one(v, `metadata[${k}]`)!;
  }
  const tail = one(q.tail, 'tail');
  if (tail !== undefined && tail !== '0' && tail !== '1') throw invalidRequest('tail must be 1 (or 0)');
  return {
    limit,
    cursor: one(q.cursor, 'cursor'),
    status: status as StatusFilter | undefined,
    template: one(q.template, 'template'),
    channel: channel as Channel | undefined,
    q: search || undefined,
    metadata,
    tail: tail === '1',
  };
}

export function messageRoutes(outbound: Outbound, config: Config, changes: Pick<Ledger, 'watch'>, bus: EventBus): Router {
  const r = Router();

  r.get('/messages', requireScope('read'), async (req, res) => {
    const p = principalOf(res);
    const scope = { workspaceId: p.workspace.id, livemode: p.livemode };
    const filters = parseFilters(req);
    if (!filters.tail) {
      res.json(await outbound.list(scope, filters));
      return;
    }

    // The stream. Subscribe before the backfill so nothing published in between is missed.
    const pending: Message[] = [];
    let live = false;
    const write = (m: Message) => res.write(`event: message\nid: ${m.publicId}\ndata: ${JSON.stringify(m)}\n\n`);
    const unsubscribe = changes.watch((m) => {
      if (m.workspaceId !== scope.workspaceId || m.livemode !== scope.livemode || !matchesFilters(m, filters)) return;
      if (live) write(m);
      else pending.push(m);
    });
    const end = () => {
      cleanup();
      res.end();
    };
    const unstop = bus.subscribe('app.stopping', end);
    const ping = setInterval(() => res.write(': ping\n\n'), config.tail.ping);
    const close = setTimeout(end, config.tail.maxDuration);
    const cleanup = () => {
      unsubscribe();
      unstop();
      clearInterval(ping);
      clearTimeout(close);
    };
    req.on('close', cleanup);

    let backfill: Message[];
    try {
      backfill = (await outbound.list(scope, { ...filters, cursor: undefined, limit: 50 })).data.reverse();
    } catch (err) {
      cleanup();
      throw err;
    }
    res
      .status(200)
      .set({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.flushHeaders();
    res.write(': tail\n\n');
    for (const m of backfill) write(m);
    live = true;
    for (const m of pending) write(m);
  });

  r.get('/messages/:id', requireScope('read'), async (req, res) => {
    const p = principalOf(res);
    res.json(await outbound.get({ workspaceId: p.workspace.id, livemode: p.livemode }, String(req.params.id)));
  });

  r.delete('/messages/:id', requireScope('cancel'), async (req, res) => {
    const p = principalOf(res);
    const m = await outbound.cancel({ workspaceId: p.workspace.id, livemode: p.livemode }, String(req.params.id));
    if (m.status !== 'canceled') throw new AppError('internal', 'cancel did not cancel');
    res.json({ id: m.publicId, status: m.status });
  });

  // Retry now: a deferred message becomes due at once (src/outbound/retry-now.ts); 409 otherwise.
  r.post('/messages/:id/retry', requireScope('send'), async (req, res) => {
    const p = principalOf(res);
    res.json(await outbound.retryNow({ workspaceId: p.workspace.id, livemode: p.livemode }, String(req.params.id)));
  });
  return r;
}
