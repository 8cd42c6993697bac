// Reports as stored and as summarised. A report is stored once per (organisation, report id): a
// duplicate (reporters resend, forwarders copy) is recognised by the unique index and changes
// nothing. The summaries read the per-day rows of the asked domains and add them up here.
import { z } from 'zod';
import { isUniqueViolation } from '../db/database.js';
import type { Insertable } from 'kysely';
import { flag, type Database } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { dailyCounts, type DmarcReport } from './dmarc.js';
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

export interface ReportStore {
  storeDmarc(report: DmarcReport): Promise<Stored>;
  storeTls(report: TlsReport): Promise<Stored>;
  dmarcSummary(q: { domains: string[]; from: string; to: string; own: ReadonlySet<string> }): Promise<DmarcDay[]>;
  tlsSummary(q: { domains: string[]; from: string; to: string }): Promise<TlsDay[]>;
}

const TOP_SOURCES = 5;

const top = (m: Map<string, number>): SourceCount[] =>
  [...m]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, TOP_SOURCES)
    .map(([ip, count]) => ({ ip, count }));

export function createReportStore({ db, clock, ids }: Pick<Deps, 'db' | 'clock' | 'ids'>): ReportStore {
  async function existing(table: 'dmarc_reports' | 'tls_reports', org: string, reportId: string): Promise<string | null> {
    const row = await db.selectFrom(table).select('id').where('org', '=', org).where('report_id', '=', reportId).executeTakeFirst();
    return row?.id ?? null;
  }

  /** Stores a report and its day rows in one transaction, once per (organisation, report id). */
  async function storeOnce<R extends 'dmarc_report_rows' | 'tls_report_rows'>(
    kind: 'dmarc' | 'tls',
    report: { org: string; reportId: string; email: string | null; begin: Date; end: Date },
    extra: { policy: string | null; partial: boolean; domains: string[] },
    rows: (id: string) => Insertable<Database[R]>[],
    rowTable: R,
  ): Promise<Stored> {
    const table = kind === 'dmarc' ? 'dmarc_reports' : 'tls_reports';
    const { domains } = extra;
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
            policy: extra.policy,
            partial: flag(extra.partial),
            received_at: clock.now().toISOString(),
          })
          .execute();
        const all = rows(id);
        for (let i = 0; i < all.length; i += 500) await trx.insertInto(rowTable).values(all.slice(i, i + 500)).execute();
      });
    } catch (err) {
      // Two copies arriving together: the other one was stored first.
      if (!isUniqueViolation(err)) throw err;
      return { id: (await existing(table, report.org, report.reportId)) ?? id, duplicate: true, domains };
    }
    return { id, duplicate: false, domains };
  }

  return {
    storeDmarc(report) {
      return storeOnce(
        'dmarc',
        report,
        {
          policy: JSON.stringify({ domain: report.domain, schema: report.schema, ...report.policy }),
          partial: report.partial,
          domains: [...new Set(report.records.map((r) => r.headerFrom))],
        },
        (id) =>
          report.records.flatMap((r) =>
            dailyCounts(report, r.count).map(({ day, count }) => ({
              report: id,
              domain: r.headerFrom,
              day,
              source_ip: r.sourceIp,
              count,
              disposition: r.disposition,
              dkim: r.dkim,
              spf: r.spf,
              envelope_from: r.envelopeFrom,
              detail: JSON.stringify({ dkim: r.dkimResults, spf: r.spfResults, reasons: r.reasons }),
            })),
          ),
        'dmarc_report_rows',
      );
    },

    storeTls(report) {
      return storeOnce(
        'tls',
        report,
        { policy: null, partial: false, domains: [...new Set(report.policies.map((p) => p.domain))] },
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
        'tls_report_rows',
      );
    },

    async dmarcSummary({ domains, from, to, own }) {
      if (domains.length === 0) return [];
      const rows = await db
        .selectFrom('dmarc_report_rows')
        .select(['report', 'domain', 'day', 'source_ip', 'count', 'disposition', 'dkim', 'spf'])
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

// The summaries' JSON (GET /v1/reports/dmarc and /tls) as zod schemas, for the API description.
const sources = z.array(z.object({ ip: z.string(), count: z.number().int() }));
export const dmarcDaySchema = z
  .object({
    domain: z.string(),
    day: z.string(),
    messages: z.number().int(),
    passed: z.number().int(),
    passRate: z.number(),
    dispositions: z.object({ none: z.number().int(), quarantine: z.number().int(), reject: z.number().int() }),
    own: z.object({ messages: z.number().int(), passed: z.number().int() }),
    foreign: z.object({ messages: z.number().int(), passed: z.number().int() }),
    failingSources: z.object({ own: sources, foreign: sources }),
    reports: z.number().int(),
  })
  .meta({ id: 'DmarcDay' });

export const tlsDaySchema = z
  .object({
    domain: z.string(),
    day: z.string(),
    successful: z.number().int(),
    failed: z.number().int(),
    failures: z.record(z.string(), z.number().int()),
    reports: z.number().int(),
  })
  .meta({ id: 'TlsDay' });
