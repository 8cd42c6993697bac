// The report address: mail to `reports@<bounce domain>` is a receiver telling us how our mail
// fared. Each attachment (or a single-part body) is unpacked, recognised as a DMARC aggregate
// report (XML) or an SMTP TLS report (JSON), parsed and stored, and each workspace that owns a
// domain it counts gets a `report.dmarc` / `report.tls` event. Such mail never enters the received
// mail list. A report that cannot be read (a zip bomb, broken XML, something else) is refused with
// a log line and nothing stored; the mail is still accepted, since retrying would not change it.
import type * as Mailparser from 'mailparser';
import { lazyRequire } from '../lib/lazy.js';
import type { Deps } from '../deps.js';
import { recordEvent } from '../events/record.js';
import { parseDmarcReport, type DmarcReport } from './dmarc.js';
import type { ReportStore, Stored } from './store.js';
import { parseTlsReport, type TlsReport } from './tls.js';
import { ReportRefused, unpackReport } from './unpack.js';

const mailparser = lazyRequire<typeof Mailparser>('mailparser');

/** The local part of the report address at the bounce domain. */
export const REPORT_LOCAL_PART = 'reports';

export type IngestOutcome =
  | { kind: 'dmarc' | 'tls'; id: string; duplicate: boolean }
  | { kind: 'refused'; reason: string; detail: string; attachment: string | null };

export interface ReportInbox {
  /** Reads every report in one mail; resolves once they are stored (before the SMTP 250). */
  ingest(mail: { raw: Buffer; mailFrom: string }): Promise<IngestOutcome[]>;
}

// Parts that may hold a report: everything but text meant for people.
const isCandidate = (contentType: string, filename: string | undefined) =>
  !/^text\/(plain|html)$/i.test(contentType) || /\.(xml|json|gz|zip)$/i.test(filename ?? '');

export function createReportInbox(deps: Pick<Deps, 'db' | 'clock' | 'ids' | 'log' | 'bus'> & { store: ReportStore }): ReportInbox {
  const { db, log, store } = deps;

  /** The workspaces (live) owning any of the domains, with the domains each owns. */
  async function owners(domains: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (domains.length === 0) return out;
    const rows = await db
      .selectFrom('domains')
      .select(['workspace_id', 'domain'])
      .where('domain', 'in', domains)
      .where('kind', '=', 'custom')
      .where('deleted_at', 'is', null)
      .execute();
    for (const r of rows) out.set(r.workspace_id, [...(out.get(r.workspace_id) ?? []), r.domain]);
    return out;
  }

  async function announce(kind: 'dmarc' | 'tls', stored: Stored, report: DmarcReport | TlsReport): Promise<void> {
    const byWorkspace = await owners(stored.domains);
    if (byWorkspace.size === 0) return;
    await db.transaction().execute(async (trx) => {
      for (const [workspaceId, domains] of byWorkspace) {
        await recordEvent(trx, deps, {
          workspaceId,
          livemode: true,
          type: kind === 'dmarc' ? 'report.dmarc' : 'report.tls',
          data: {
            id: stored.id,
            org: report.org,
            reportId: report.reportId,
            begin: report.begin.toISOString(),
            end: report.end.toISOString(),
            domains,
            ...(kind === 'dmarc' ? dmarcTotals(report as DmarcReport, domains) : tlsTotals(report as TlsReport, domains)),
          },
        });
      }
    });
    deps.bus.publish('events.recorded', { type: kind === 'dmarc' ? 'report.dmarc' : 'report.tls' });
  }

  return {
    async ingest({ raw, mailFrom }) {
      const parsed = await mailparser().simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
      const parts = parsed.attachments.filter((a) => isCandidate(a.contentType, a.filename));
      const outcomes: IngestOutcome[] = [];
      if (parts.length === 0) {
        outcomes.push({ kind: 'refused', reason: 'not-a-report', detail: 'the mail has no report attached', attachment: null });
      }
      for (const part of parts) {
        try {
          const doc = await unpackReport(part.content);
          if (doc.format === 'xml') {
            const report = parseDmarcReport(doc.text);
            const stored = await store.storeDmarc(report);
            if (!stored.duplicate) await announce('dmarc', stored, report);
            outcomes.push({ kind: 'dmarc', id: stored.id, duplicate: stored.duplicate });
          } else {
            const report = parseTlsReport(doc.text);
            const stored = await store.storeTls(report);
            if (!stored.duplicate) await announce('tls', stored, report);
            outcomes.push({ kind: 'tls', id: stored.id, duplicate: stored.duplicate });
          }
        } catch (err) {
          if (!(err instanceof ReportRefused)) throw err;
          outcomes.push({ kind: 'refused', reason: err.reason, detail: err.message, attachment: part.filename ?? null });
        }
      }
      for (const o of outcomes) {
        if (o.kind === 'refused') log.warn({ from: mailFrom, attachment: o.attachment, reason: o.reason, detail: o.detail }, 'report refused');
        else log.info({ report: o.id, kind: o.kind, duplicate: o.duplicate, from: mailFrom }, o.duplicate ? 'report already stored' : 'report stored');
      }
      return outcomes;
    },
  };
}

function dmarcTotals(report: DmarcReport, domains: string[]) {
  const mine = report.records.filter((r) => domains.includes(r.headerFrom));
  const messages = mine.reduce((a, r) => a + r.count, 0);
  const passed = mine.filter((r) => r.dkim === 'pass' || r.spf === 'pass').reduce((a, r) => a + r.count, 0);
  return { messages, passed };
}

function tlsTotals(report: TlsReport, domains: string[]) {
  const mine = report.policies.filter((p) => domains.includes(p.domain));
  return { successful: mine.reduce((a, p) => a + p.successful, 0), failed: mine.reduce((a, p) => a + p.failed, 0) };
}

