// DMARC aggregate reports (RFC 7489 appendix C, and the DMARC 2.0 schema of RFC 9990) in one
// normalised shape, read by dmarc-reader.ts, and how a report's counts fall on UTC days.

export interface DmarcRecord {
  sourceIp: string;
  count: number;
  /** What the receiver did: none, quarantine or reject. */
  disposition: string;
  /** The DMARC evaluation of DKIM and SPF (aligned): pass or fail. */
  dkim: 'pass' | 'fail';
  spf: 'pass' | 'fail';
  headerFrom: string;
  envelopeFrom: string | null;
  /** The raw authentication results the receiver saw, before alignment. */
  dkimResults: { domain: string; selector: string | null; result: string }[];
  spfResults: { domain: string; scope: string | null; result: string }[];
  /** Policy override reasons (forwarded, mailing_list, local_policy, …). */
  reasons: string[];
}

/** What a report says before its records: who sent it, which report, and the policy it was made under. */
export interface DmarcHead {
  schema: 'rfc7489' | 'rfc9990';
  org: string;
  email: string | null;
  reportId: string;
  begin: Date;
  end: Date;
  /** The published policy the report was made under. */
  domain: string;
  policy: { p: string; sp: string | null; np: string | null; adkim: string; aspf: string; pct: number | null; testing: boolean };
}

export interface DmarcReport extends DmarcHead {
  records: DmarcRecord[];
  /** The document was cut short: only the records before the break were read. */
  partial: boolean;
}

const DAY = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The report's counts per UTC day. A report covering one day or less counts on the day it began;
 * a longer one is split across the days it spans in proportion to each day's share of its range
 * (largest remainder, so the parts add up to the record's count).
 */
export function dailyCounts(report: Pick<DmarcReport, 'begin' | 'end'>, count: number): { day: string; count: number }[] {
  const begin = report.begin.getTime();
  const end = Math.max(report.end.getTime(), begin);
  if (end - begin <= DAY) return [{ day: dayOf(begin), count }];
  const shares: { day: string; weight: number }[] = [];
  for (let start = begin; start < end; ) {
    const next = Math.min(end, Math.floor(start / DAY) * DAY + DAY);
    shares.push({ day: dayOf(start), weight: next - start });
    start = next;
  }
  const total = end - begin;
  const parts = shares.map((s) => ({ day: s.day, exact: (count * s.weight) / total }));
  const out = parts.map((p) => ({ day: p.day, count: Math.floor(p.exact) }));
  let left = count - out.reduce((a, p) => a + p.count, 0);
  const order = parts.map((p, i) => ({ i, rem: p.exact - Math.floor(p.exact) })).sort((a, b) => b.rem - a.rem || a.i - b.i);
  for (const { i } of order) {
    if (left <= 0) break;
    out[i].count++;
    left--;
  }
  return out.filter((p) => p.count > 0);
}

/** One stored row of a report: a record's count on one UTC day (the report's id is added when written). */
export interface DmarcRow {
  domain: string;
  day: string;
  source_ip: string;
  count: number;
  disposition: string;
  dkim: 'pass' | 'fail';
  spf: 'pass' | 'fail';
  envelope_from: string | null;
  /** JSON: the raw DKIM and SPF results and the override reasons. */
  detail: string;
}

/** The rows records are stored as: each record's count on each day the report spans (dailyCounts). */
export function dayRows(report: Pick<DmarcHead, 'begin' | 'end'>, records: DmarcRecord[]): DmarcRow[] {
  return records.flatMap((r) =>
    dailyCounts(report, r.count).map(({ day, count }) => ({
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
  );
}
