// GET /v1/reports/dmarc and /v1/reports/tls (scope read): what receivers reported about the
// workspace's domains, per domain per UTC day. `domain` one of the workspace's domains (all when
// absent); `from`/`to` UTC days inclusive, default the last 30 days; at most 366 days at once.
// The TLS answer also carries `inbound`: the STARTTLS sessions senders opened to this box's MX.
import { Router } from 'express';
import { invalidRequest } from '../../lib/errors.js';
import { zodIssues } from '../../lib/validation.js';
import { reportQuery } from '../../contract/report-schemas.js';
import type { ReportQuery, Reports } from '../../reports/index.js';
import { principalOf, requireScope } from '../auth.js';

const DAY = 86_400_000;
const MAX_DAYS = 366;

function parseQuery(query: unknown, now: Date): ReportQuery {
  const q = reportQuery.safeParse(query);
  if (!q.success)
    throw invalidRequest(
      zodIssues(q.error)
        .map((i) => `${i.path}: ${i.message}`)
        .join('; '),
    );
  const to = q.data.to ?? now.toISOString().slice(0, 10);
  const from = q.data.from ?? new Date(Date.parse(to) - 29 * DAY).toISOString().slice(0, 10);
  if (from > to) throw invalidRequest('from: must not be after to');
  if ((Date.parse(to) - Date.parse(from)) / DAY + 1 > MAX_DAYS) throw invalidRequest(`from, to: at most ${MAX_DAYS} days at once`);
  return { domain: q.data.domain, from, to };
}

export function reportRoutes(reports: Reports, now: () => Date): Router {
  const r = Router();
  r.get('/reports/dmarc', requireScope('read'), async (req, res) => {
    const q = parseQuery(req.query, now());
    res.json({ from: q.from, to: q.to, data: await reports.dmarc(principalOf(res).workspace.id, q) });
  });
  r.get('/reports/tls', requireScope('read'), async (req, res) => {
    const q = parseQuery(req.query, now());
    const { data, inbound } = await reports.tls(principalOf(res).workspace.id, q);
    res.json({ from: q.from, to: q.to, data, inbound });
  });
  return r;
}
