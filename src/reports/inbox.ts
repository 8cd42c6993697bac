// The report address: mail to `reports@<bounce domain>` is a receiver telling us how our mail
// fared. Each attachment (or a single-part body) is unpacked, recognised as a DMARC aggregate
// report (XML) or an SMTP TLS report (JSON), parsed and stored, and each workspace that owns a
// domain it counts gets a `report.dmarc` / `report.tls` event. Such mail never enters the received
// mail list. The reports are read in a thread (report-reading.ts) and written here as they are
// read, a batch of records at a time; a duplicate is recognised from the report's head, before its
// records are read. A report that cannot be read (broken XML, something else) is refused with a log
// line and nothing stored; the mail is still accepted, since retrying would not change it. One too
// large to read (beyond the unpacked size or `reports.maxRows` records) is refused the same way, and
// the SMTP listener answers its mail 552 5.3.4, as for a message over the size limit.
import type { Deps } from '../deps.js';
import { recordEvent } from '../events/index.js';
import type { DmarcHead, DmarcRow } from './dmarc.js';
import type { HeadAnswer, ReadStep } from './read-reports.js';
import type { ReadMail } from './report-reading.js';
import type { ReportStore, Stored } from './store.js';
import type { TlsReport } from './tls.js';

/** The local part of the report address at the bounce domain. */
export const REPORT_LOCAL_PART = 'reports';

export type IngestOutcome =
  | { kind: 'dmarc' | 'tls'; id: string; duplicate: boolean; records?: number }
  /** The same report is being written from another copy: the sender should try again later. */
  | { kind: 'busy'; id: string }
  | { kind: 'refused'; reason: string; detail: string; attachment: string | null };

export interface ReportInbox {
  /** Reads every report in one mail; resolves once they are stored (before the SMTP 250). */
  ingest(mail: { raw: Buffer; mailFrom: string }): Promise<IngestOutcome[]>;
}

/** Messages and passed messages per header From domain, added up as the records go by. */
type Totals = Map<string, { messages: number; passed: number }>;

/** The DMARC report being written: its id, its head and what it counted so far. */
interface Writing {
  id: string;
  head: DmarcHead;
  totals: Totals;
  records: number;
}

export function createReportInbox(
  deps: Pick<Deps, 'db' | 'clock' | 'ids' | 'log' | 'bus'> & { store: ReportStore; read: ReadMail },
): ReportInbox {
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

  async function announce(
    kind: 'dmarc' | 'tls',
    stored: Pick<Stored, 'id' | 'domains'>,
    report: Pick<DmarcHead, 'org' | 'reportId' | 'begin' | 'end'>,
    totals: (domains: string[]) => object,
  ): Promise<void> {
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
            ...totals(domains),
          },
        });
      }
    });
    deps.bus.publish('events.recorded', { type: kind === 'dmarc' ? 'report.dmarc' : 'report.tls' });
  }

  /** What to do with a step of reading a mail's reports; `writing` is the DMARC report being written. */
  async function take(step: ReadStep, outcomes: IngestOutcome[], writing: { now: Writing | null }): Promise<HeadAnswer | void> {
    switch (step.step) {
      case 'head': {
        const begun = await store.beginDmarc(step.head);
        if (begun.kind === 'busy') outcomes.push({ kind: 'busy', id: begun.id });
        if (begun.kind !== 'new') {
          if (begun.kind === 'duplicate') outcomes.push({ kind: 'dmarc', id: begun.id, duplicate: true });
          return 'skip';
        }
        writing.now = { id: begun.id, head: step.head, totals: new Map(), records: 0 };
        return 'read';
      }
      case 'rows': {
        const w = writing.now!;
        await store.addDmarcRows(w.id, step.rows);
        count(w.totals, step.rows);
        w.records += step.records;
        return;
      }
      case 'end': {
        const w = writing.now!;
        writing.now = null;
        await store.finishDmarc(w.id, step.partial);
        const stored = { id: w.id, domains: [...w.totals.keys()] };
        await announce('dmarc', stored, w.head, (domains) => dmarcTotals(w.totals, domains));
        outcomes.push({ kind: 'dmarc', id: w.id, duplicate: false, records: w.records });
        return;
      }
      case 'tls': {
        const report = step.report;
        const stored = await store.storeTls(report);
        if (!stored.duplicate) await announce('tls', stored, report, (domains) => tlsTotals(report, domains));
        outcomes.push({ kind: 'tls', id: stored.id, duplicate: stored.duplicate });
        return;
      }
      case 'refused': {
        // A report refused part way (too many records, a container that breaks) leaves nothing behind.
        if (writing.now) {
          const id = writing.now.id;
          writing.now = null;
          await store.discardDmarc(id);
        }
        outcomes.push({ kind: 'refused', reason: step.reason, detail: step.detail, attachment: step.attachment });
      }
    }
  }

  return {
    async ingest({ raw, mailFrom }) {
      const outcomes: IngestOutcome[] = [];
      const writing: { now: Writing | null } = { now: null };
      try {
        await deps.read(raw, (step) => take(step, outcomes, writing));
      } catch (err) {
        // Nothing half-written is left: the sender is told to retry (451) and writes it anew.
        if (writing.now) await store.discardDmarc(writing.now.id).catch((e: unknown) => log.warn({ err: e }, 'clearing a report failed'));
        throw err;
      }
      for (const o of outcomes) {
        if (o.kind === 'refused') log.warn({ from: mailFrom, attachment: o.attachment, reason: o.reason, detail: o.detail }, 'report refused');
        else if (o.kind === 'busy') log.info({ report: o.id, from: mailFrom }, 'report being stored from another copy; try again later');
        else log.info(
            { report: o.id, kind: o.kind, duplicate: o.duplicate, records: o.records, from: mailFrom },
            o.duplicate ? 'report already stored' : 'report stored',
          );
      }
      return outcomes;
    },
  };
}

function count(totals: Totals, rows: DmarcRow[]): void {
  for (const r of rows) {
    const t = totals.get(r.domain) ?? { messages: 0, passed: 0 };
    t.messages += r.count;
    if (r.dkim === 'pass' || r.spf === 'pass') t.passed += r.count;
    totals.set(r.domain, t);
  }
}

function dmarcTotals(totals: Totals, domains: string[]) {
  let messages = 0;
  let passed = 0;
  for (const d of domains) {
    messages += totals.get(d)?.messages ?? 0;
    passed += totals.get(d)?.passed ?? 0;
  }
  return { messages, passed };
}

function tlsTotals(report: TlsReport, domains: string[]) {
  const mine = report.policies.filter((p) => domains.includes(p.domain));
  return { successful: mine.reduce((a, p) => a + p.successful, 0), failed: mine.reduce((a, p) => a + p.failed, 0) };
}

