import { Router } from 'express';
import type { ReceivedReader } from '../../inbound/index.js';
import { invalidRequest } from '../../lib/errors.js';
import { principalOf, requireScope } from '../auth.js';

function queryString(v: unknown, name: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalidRequest(`${name} must be given once, as a string`);
  return v;
}

/** RFC 6266: an ASCII fallback plus the exact name in filename* (RFC 8187 percent-encoding). */
function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\;%]/g, '_');
  const exact = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

export function inboundMessageRoutes({ messages }: { messages: ReceivedReader }): Router {
  const r = Router();
  r.use('/inbound/messages', requireScope('inbound'));
  r.get('/inbound/messages', async (req, res) => {
    const limitText = queryString(req.query.limit, 'limit');
    let limit: number | undefined;
    if (limitText !== undefined) {
      limit = Number(limitText);
      if (!/^\d+$/.test(limitText) || limit < 1 || limit > 100) throw invalidRequest('limit must be an integer from 1 to 100');
    }
    const p = principalOf(res);
    const list = await messages.list(p.workspace.id, p.livemode, {
      limit,
      before: queryString(req.query.before, 'before'),
      address: queryString(req.query.address, 'address'),
    });
    res.json({ messages: list });
  });
  r.get('/inbound/messages/:id', async (req, res) => {
    const p = principalOf(res);
    res.json(await messages.detail(p.workspace.id, p.livemode, req.params.id));
  });
  r.get('/inbound/messages/:id/raw', async (req, res) => {
    const p = principalOf(res);
    const raw = await messages.raw(p.workspace.id, p.livemode, req.params.id);
    // A download, never rendered inline (the dashboard links to it with the session cookie).
    res.setHeader('Content-Disposition', contentDisposition(`${req.params.id}.eml`));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type('message/rfc822').send(raw);
  });
  r.get('/inbound/messages/:id/attachments/:index', async (req, res) => {
    if (!/^\d{1,6}$/.test(req.params.index)) throw invalidRequest('index must be a non-negative integer');
    const p = principalOf(res);
    const a = await messages.attachment(p.workspace.id, p.livemode, req.params.id, Number(req.params.index));
    // The reader made the type and the name safe (a media type; at most 255 bytes, no controls).
    res.setHeader('Content-Type', a.contentType);
    res.setHeader('Content-Disposition', contentDisposition(a.filename));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.send(a.content);
  });
  return r;
}
