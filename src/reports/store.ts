// Reports as stored and as summarised. A report is stored once per (organisation, report id): a
// duplicate (reporters resend, forwarders copy) is recognised by the unique index and changes
// nothing. A DMARC report is written in batches, one transaction each, so a report of 100,000
// records never holds the database for long: it is begun (its row, not yet stored), its records
// are added, and it is finished (stored_at set). The summaries read only finished reports; one
// begun and never finished (the daemon stopped) is cleared when the same report arrives again after
// REWRITE_AFTER, and until then the copy is told to come back later. The summaries read the
// per-day rows of the asked domains and add them up here.
import { type Database, flag, isUniqueViolation } from '../db/index.js';
import type { Insertable } from 'kysely';
import type { Deps } from '../deps.js';
import { dailyCounts, type DmarcHead, type DmarcRow } from './dmarc.js';
import type { TlsReport } from './tls.js';

export interface Stored {
  /** Our id of the report (rpt_…); the existing one for a duplicate. */
  id: string;
  duplicate: boolean;
  /** The domains it counts mail of. */
  domains: string[];
}

export interface SourceCount {
  ip: string;
  count: number;
}

export interface DmarcDay {
  domain: string;
  day: string;
  messages: number;
  /** Messages that passed DMARC (aligned DKIM or aligned SPF). */
  passed: number;
  passRate: number;
  dispositions: { none: number; quarantine: number; reject: number };
  /** Mail from Postern's own addresses, and from everything else using the domain. */
  own: { messages: number; passed: number };
  foreign: { messages: number; passed: number };
  /** The sources whose mail failed DMARC most, own and foreign, at most five each. */
  failingSources: { own: SourceCount[]; foreign: SourceCount[] };
  reports: number;
}

export interface TlsDay {
  domain: string;
  day: string;
  successful: number;
  failed: number;
  /** Failed sessions by result type (starttls-not-supported, certificate-expired, sts-policy-invalid, …). */
  failures: Record<string, number>;
  reports: number;
}

/** A DMARC report begun: new (write its records), already stored, or being written by someone else. */
export type Begun = { kind: 'new' | 'duplicate' | 'busy'; id: string };

export interface ReportStore {
  /** Begins a DMARC report from its head, unless it is stored already (or being written). */
  beginDmarc(head: DmarcHead): Promise<Begun>;
  /** Writes a batch of a begun report's rows (dmarc.ts dayRows), in one transaction. */
  addDmarcRows(id: string, rows: DmarcRow[]): Promise<void>;
  /** The report is whole (or as whole as it came): the summaries read it from now on. */
  finishDmarc(id: string, partial: boolean): Promise<void>;
  /** Clears a begun report and its records, in batches. */
  discardDmarc(id: string): Promise<void>;
  storeTls(report: TlsReport): Promise<Stored>;
  dmarcSummary(q: { domains: string[]; from: string; to: string; own: ReadonlySet<string> }): Promise<DmarcDay[]>;
  tlsSummary(q: { domains: string[]; from: string; to: string }): Promise<TlsDay[]>;
}

const TOP_SOURCES = 5;

/**
 * How long a begun report may go unfinished before another copy of it clears it and is written in
 * its place. Writing the largest report allowed takes seconds; a copy arriving sooner is refused for
 * now (451) rather than taken as a duplicate, since the first writer may yet fail.
 */
export const REWRITE_AFTER_MS = 10 * 60_000;
/** Rows cleared per statement when a report is discarded. */
const DISCARD_BATCH = 2_000;
/**
 * Rows per INSERT of a report's records: SQLite runs each statement on the event loop, so each is
 * kept to a few milliseconds (a transaction's statements let the loop turn between them).
 */
const INSERT_ROWS = 250;

const top = (m: Map<string, number>): SourceCount[] =>
  [...m]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, TOP_SOURCES)
    .map(([ip, count]) => ({ ip, count }));

export function createReportStore({ db, clock, ids }: Pick<Deps, 'db' | 'clock' | 'ids'>): ReportStore {
  async function existing(table: 'tls_reports', org: string, reportId: string): Promise<string | null> {
    const row = await db.selectFrom(table).select('id').where('org', '=', org).where('report_id', '=', reportId).executeTakeFirst();
    return row?.id ?? null;
  }

  /** Clears a report's rows a batch at a time, then the report. */
  async function discard(id: string): Promise<void> {
    for (;;) {
      const batch = db.selectFrom('dmarc_report_rows').select('id').where('report', '=', id).limit(DISCARD_BATCH);
      const r = await db.deleteFrom('dmarc_report_rows').where('id', 'in', batch).executeTakeFirst();
      if (Number(r.numDeletedRows) < DISCARD_BATCH) break;
    }
    await db.deleteFrom('dmarc_reports').where('id', '=', id).execute();
  }

  /** Stores a TLS report (small: one entry per policy domain) and its day rows in one transaction, once. */
  async function storeOnce(
    report: { org: string; reportId: string; email: string | null; begin: Date; end: Date },
    domains: string[],
    rows: (id: string) => Insertable<Database['tls_report_rows']>[],
  ): Promise<Stored> {
    const table = 'tls_reports';
    const found = await existing(table, report.org, report.reportId);
    if (found) return { id: found, duplicate: true, domains };
    const id = ids.publicId('rpt');
    try {
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto(table)
          .values({
            id,
            org: report.org,
            report_id: report.reportId,
            email: report.email,
            begin_at: report.begin.toISOString(),
            end_at: report.end.toISOString(),
            policy: null,
            partial: flag(false),
            received_at: clock.now().toISOString(),
            stored_at: clock.now().toISOString(),
          })
          .execute();
        const all = rows(id);
        for (let i = 0; i < all.length; i += 500) await trx.insertInto('tls_report_rows').values(all.slice(i, i + 500)).execute();
      });
    } catch (err) {
      // Two copies arriving together: the other one was stored first.
      if (!isUniqueViolation(err)) throw err;
      return { id: (await existing(table, report.org, report.reportId)) ?? id, duplicate: true, domains };
    }
    return { id, duplicate: false, domains };
  }

  return {
    async beginDmarc(head) {
      const found = await db
        .selectFrom('dmarc_reports')
        .select(['id', 'stored_at', 'received_at'])
        .where('org', '=', head.org)
        .where('report_id', '=', head.reportId)
        .executeTakeFirst();
      if (found?.stored_at) return { kind: 'duplicate', id: found.id };
      if (found) {
        if (clock.now().getTime() - Date.parse(found.received_at) < REWRITE_AFTER_MS) return { kind: 'busy', id: found.id };
        await discard(found.id);
      }
      const id = ids.publicId('rpt');
      try {
        await db
          .insertInto('dmarc_reports')
          .values({
            id,
            org: head.org,
            report_id: head.reportId,
            email: head.email,
            begin_at: head.begin.toISOString(),
            end_at: head.end.toISOString(),
            policy: JSON.stringify({ domain: head.domain, schema: head.schema, ...head.policy }),
            partial: flag(false),
            received_at: clock.now().toISOString(),
            stored_at: null,
          })
          .execute();
      } catch (err) {
        // Two copies arriving together: the other one began first.
        if (!isUniqueViolation(err)) throw err;
        const other = await db
          .selectFrom('dmarc_reports')
          .select(['id', 'stored_at'])
          .where('org', '=', head.org)
          .where('report_id', '=', head.reportId)
          .executeTakeFirst();
        return { kind: other?.stored_at ? 'duplicate' : 'busy', id: other?.id ?? id };
      }
      return { kind: 'new', id };
    },

    async addDmarcRows(id, rows) {
      if (rows.length === 0) return;
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < rows.length; i += INSERT_ROWS) {
          await trx
            .insertInto('dmarc_report_rows')
            .values(rows.slice(i, i + INSERT_ROWS).map((r) => ({ report: id, ...r })))
            .execute();
        }
      });
    },

    async finishDmarc(id, partial) {
      await db.updateTable('dmarc_reports').set({ stored_at: clock.now().toISOString(), partial: flag(partial) }).where('id', '=', id).execute();
    },

    discardDmarc: (id) => discard(id),

    storeTls(report) {
      return storeOnce(
        report,
        [...new Set(report.policies.map((p) => p.domain))],
        (id) =>
          report.policies.flatMap((p) => {
            const ok = new Map(dailyCounts(report, p.successful).map((d) => [d.day, d.count]));
            const bad = new Map(dailyCounts(report, p.failed).map((d) => [d.day, d.count]));
            const failures = p.failures.map((f) => ({ f, days: new Map(dailyCounts(report, f.count).map((d) => [d.day, d.count])) }));
            const days = new Set([...ok.keys(), ...bad.keys(), ...failures.flatMap((x) => [...x.days.keys()])]);
            if (days.size === 0) days.add(report.begin.toISOString().slice(0, 10));
            return [...days].map((day) => ({
              report: id,
              domain: p.domain,
              day,
              policy_type: p.type,
              mx_hosts: JSON.stringify(p.mxHosts),
              successful: ok.get(day) ?? 0,
              failed: bad.get(day) ?? 0,
              failures: JSON.stringify(
                failures.filter((x) => (x.days.get(day) ?? 0) > 0).map((x) => ({ ...x.f, count: x.days.get(day) ?? 0 })),
              ),
            }));
          }),
      );
    },

    async dmarcSummary({ domains, from, to, own }) {
      if (domains.length === 0) return [];
      const rows = await db
        .selectFrom('dmarc_report_rows')
        .select(['report', 'domain', 'day', 'source_ip', 'count', 'disposition', 'dkim', 'spf'])
        .where('report', 'in', db.selectFrom('dmarc_reports').select('id').where('stored_at', 'is not', null))
        .where('domain', 'in', domains)
        .where('day', '>=', from)
        .where('day', '<=', to)
        .execute();
      const days = new Map<string, DmarcDay & { ownFailing: Map<string, number>; foreignFailing: Map<string, number>; ids: Set<string> }>();
      for (const r of rows) {
        const key = `${r.domain} ${r.day}`;
        let d = days.get(key);
        if (!d) {
          d = {
            domain: r.domain,
            day: r.day,
            messages: 0,
            passed: 0,
            passRate: 0,
            dispositions: { none: 0, quarantine: 0, reject: 0 },
            own: { messages: 0, passed: 0 },
            foreign: { messages: 0, passed: 0 },
            failingSources: { own: [], foreign: [] },
            reports: 0,
            ownFailing: new Map(),
            foreignFailing: new Map(),
            ids: new Set(),
          };
          days.set(key, d);
        }
        const pass = r.dkim === 'pass' || r.spf === 'pass';
        const side = own.has(r.source_ip) ? 'own' : 'foreign';
        d.ids.add(r.report);
        d.messages += r.count;
        d[side].messages += r.count;
        if (pass) {
          d.passed += r.count;
          d[side].passed += r.count;
        } else {
          const failing = side === 'own' ? d.ownFailing : d.foreignFailing;
          failing.set(r.source_ip, (failing.get(r.source_ip) ?? 0) + r.count);
        }
        if (r.disposition === 'quarantine' || r.disposition === 'reject') d.dispositions[r.disposition] += r.count;
        else d.dispositions.none += r.count;
      }
      return [...days.values()]
        .map(({ ownFailing, foreignFailing, ids: reportIds, ...d }) => ({
          ...d,
          passRate: d.messages === 0 ? 0 : Math.round((d.passed / d.messages) * 10_000) / 10_000,
          failingSources: { own: top(ownFailing), foreign: top(foreignFailing) },
          reports: reportIds.size,
        }))
        .sort((a, b) => a.domain.localeCompare(b.domain) || a.day.localeCompare(b.day));
    },

    async tlsSummary({ domains, from, to }) {
      if (domains.length === 0) return [];
      const rows = await db
        .selectFrom('tls_report_rows')
        .select(['report', 'domain', 'day', 'successful', 'failed', 'failures'])
        .where('domain', 'in', domains)
        .where('day', '>=', from)
        .where('day', '<=', to)
        .execute();
      const days = new Map<string, TlsDay & { ids: Set<string> }>();
      for (const r of rows) {
        const key = `${r.domain} ${r.day}`;
        let d = days.get(key);
        if (!d) {
          d = { domain: r.domain, day: r.day, successful: 0, failed: 0, failures: {}, reports: 0, ids: new Set() };
          days.set(key, d);
        }
        d.ids.add(r.report);
        d.successful += r.successful;
        d.failed += r.failed;
        for (const f of JSON.parse(r.failures) as { resultType: string; count: number }[]) {
          d.failures[f.resultType] = (d.failures[f.resultType] ?? 0) + f.count;
        }
      }
      return [...days.values()]
        .map(({ ids: reportIds, ...d }) => ({ ...d, reports: reportIds.size }))
        .sort((a, b) => a.domain.localeCompare(b.domain) || a.day.localeCompare(b.day));
    },
  };
}
