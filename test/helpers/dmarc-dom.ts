// The DMARC report parser Postern used before reports were read as a stream: fast-xml-parser over
// the whole document. Kept as the oracle the streaming reader (src/reports/dmarc-reader.ts) is
// checked against; it materialises the whole document, which is why the daemon no longer uses it.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { DmarcRecord, DmarcReport } from '../../src/reports/dmarc.js';
import { ReportRefused } from '../../src/reports/unpack.js';

const ARRAYS = new Set([
  'feedback.record',
  'feedback.record.auth_results.dkim',
  'feedback.record.auth_results.spf',
  'feedback.record.row.policy_evaluated.reason',
  'feedback.report_metadata.error',
]);

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  processEntities: false,
  htmlEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  isArray: (_name, jpath) => ARRAYS.has(String(jpath)),
});

type Node = Record<string, unknown>;
const obj = (v: unknown): Node => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Node) : {});
const text = (v: unknown): string => {
  if (typeof v === 'string') return v.trim();
  if (typeof v === 'number') return String(v);
  const t = obj(v)['#text'];
  return typeof t === 'string' ? t.trim() : '';
};
const lower = (v: unknown) => text(v).toLowerCase();
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

/** Keeps every record that arrived whole from a document cut short, closing the root after them. */
function repair(xml: string): string | null {
  const last = xml.lastIndexOf('</record>');
  if (last === -1) return null;
  return xml.slice(0, last + '</record>'.length) + '</feedback>';
}

function epoch(v: unknown, what: string): Date {
  const s = text(v);
  if (!/^\d{1,12}$/.test(s)) throw new ReportRefused('corrupt', `date_range ${what} is not a Unix time: ${s.slice(0, 40)}`);
  return new Date(Number(s) * 1000);
}

const passFail = (v: unknown): 'pass' | 'fail' => (lower(v) === 'pass' ? 'pass' : 'fail');

export function parseDmarcReportWhole(xml: string): DmarcReport {
  if (/<!ENTITY/i.test(xml)) throw new ReportRefused('corrupt', 'the document declares entities; they are never expanded');
  let partial = false;
  let doc = xml;
  if (XMLValidator.validate(doc) !== true) {
    const fixed = repair(doc);
    if (!fixed || XMLValidator.validate(fixed) !== true)
      throw new ReportRefused('corrupt', 'not well-formed XML, and no whole record to keep');
    doc = fixed;
    partial = true;
  }
  const root = obj(parser.parse(doc) as unknown);
  const feedback = obj(root.feedback);
  if (!root.feedback) throw new ReportRefused('not-a-report', 'no <feedback> root: not a DMARC aggregate report');
  const meta = obj(feedback.report_metadata);
  const range = obj(meta.date_range);
  const published = obj(feedback.policy_published);
  const domain = lower(published.domain);
  if (!domain) throw new ReportRefused('not-a-report', 'policy_published names no domain');
  const reportId = text(meta.report_id);
  const org = text(meta.org_name);
  if (!reportId || !org) throw new ReportRefused('not-a-report', 'report_metadata lacks org_name or report_id');
  const pct = text(published.pct);

  const records: DmarcRecord[] = [];
  for (const r of list(feedback.record)) {
    const rec = obj(r);
    const row = obj(rec.row);
    const evaluated = obj(row.policy_evaluated);
    const ids = obj(rec.identifiers);
    const auth = obj(rec.auth_results);
    const count = Number(text(row.count));
    const sourceIp = lower(row.source_ip);
    if (!sourceIp || !Number.isSafeInteger(count) || count < 0) continue;
    records.push({
      sourceIp,
      count,
      disposition: lower(evaluated.disposition) || 'none',
      dkim: passFail(evaluated.dkim),
      spf: passFail(evaluated.spf),
      headerFrom: lower(ids.header_from) || domain,
      envelopeFrom: lower(ids.envelope_from) || null,
      dkimResults: list(auth.dkim).map((d) => ({
        domain: lower(obj(d).domain),
        selector: text(obj(d).selector) || null,
        result: lower(obj(d).result),
      })),
      spfResults: list(auth.spf).map((s) => ({
        domain: lower(obj(s).domain),
        scope: lower(obj(s).scope) || null,
        result: lower(obj(s).result),
      })),
      reasons: list(evaluated.reason)
        .map((x) => lower(obj(x).type))
        .filter(Boolean),
    });
  }
  return {
    schema: /<(\w+:)?feedback\b[^>]*\burn:ietf:params:xml:ns:dmarc-2\.0\b/.test(doc) ? 'rfc9990' : 'rfc7489',
    org,
    email: text(meta.email) || null,
    reportId,
    begin: epoch(range.begin, 'begin'),
    end: epoch(range.end, 'end'),
    domain,
    policy: {
      p: lower(published.p) || 'none',
      sp: lower(published.sp) || null,
      np: lower(published.np) || null,
      adkim: lower(published.adkim) || 'r',
      aspf: lower(published.aspf) || 'r',
      pct: /^\d+$/.test(pct) ? Number(pct) : null,
      testing: lower(published.testing) === 'y',
    },
    records,
    partial,
  };
}
