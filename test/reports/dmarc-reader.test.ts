// The streaming DMARC reader against the whole-document parser it replaced (test/helpers/dmarc-dom.ts):
// over generated reports in both schemas, fed in pieces split at any byte, cut short anywhere, the
// reader gives the same report, or refuses it for the same reason. Also the fixed reports in
// test/fixtures/reports, and a report that is one head followed by a break: the head is handed out
// before the break is seen (a duplicate is known whatever follows).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import t from 'tap';
import type { DmarcReport } from '../../src/reports/dmarc.js';
import { DmarcReader } from '../../src/reports/dmarc-reader.js';
import { ReportRefused } from '../../src/reports/unpack.js';
import { parseDmarcReportWhole } from '../helpers/dmarc-dom.js';
import { holds } from '../helpers/property.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'reports');

type Outcome = { report: DmarcReport } | { refused: string };

/** Equal outcomes; otherwise false with both printed, for fast-check's report. */
const same = (a: Outcome, b: Outcome): boolean => {
  if (isDeepStrictEqual(a, b)) return true;
  throw new Error(`streamed ${JSON.stringify(a)}\n   whole ${JSON.stringify(b)}`);
};

const whole = (xml: string): Outcome => {
  try {
    return { report: parseDmarcReportWhole(xml) };
  } catch (err) {
    if (err instanceof ReportRefused) return { refused: err.reason };
    throw err;
  }
};

/** The document fed to the reader as bytes split at `cuts`, decoded as the report thread does. */
const streamed = (xml: string, cuts: number[]): Outcome => {
  const bytes = Buffer.from(xml);
  const reader = new DmarcReader();
  const decoder = new TextDecoder('utf-8');
  const records = [];
  try {
    let at = 0;
    for (const cut of [...cuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b), bytes.length]) {
      reader.feed(decoder.decode(bytes.subarray(at, cut), { stream: true }));
      at = cut;
      if (reader.head) reader.resume();
      records.push(...reader.take());
    }
    reader.feed(decoder.decode());
    reader.end();
    reader.resume();
    records.push(...reader.take());
    return { report: { ...reader.head!, records, partial: reader.partial } };
  } catch (err) {
    if (err instanceof ReportRefused) return { refused: err.reason };
    throw err;
  }
};

// Text as reporters write it: names, odd case, surrounding space, non-ASCII; never markup.
const word = fc.stringMatching(/^[A-Za-z0-9._ -]{0,12}$/);
const text = fc.oneof(word, fc.constantFrom('Acme Inc.', 'éxample.org', '日本.jp', ' Mixed.Case ', ''));
const digits = fc.bigInt({ min: 0n, max: 99_999_999_999n }).map(String);
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

const auth = fc.record({ domain: maybe(text), selector: maybe(text), scope: maybe(fc.constantFrom('mfrom', 'helo', 'HELO')), result: maybe(fc.constantFrom('pass', 'fail', 'None', 'softfail')) });
const record = fc.record({
  sourceIp: maybe(fc.oneof(fc.ipV4(), fc.ipV6(), fc.constant('2001:DB8::1'))),
  count: maybe(fc.oneof(fc.nat(100000).map(String), fc.constantFrom('x', '-1', '1e3', ' 7 ', ''))),
  disposition: maybe(fc.constantFrom('none', 'Quarantine', 'reject', '')),
  dkim: maybe(fc.constantFrom('pass', 'fail', 'PASS')),
  spf: maybe(fc.constantFrom('pass', 'fail')),
  reasons: fc.array(fc.record({ type: maybe(fc.constantFrom('forwarded', 'Mailing_List', 'local_policy')), comment: maybe(word) }), { maxLength: 2 }),
  headerFrom: maybe(text),
  envelopeFrom: maybe(text),
  dkimResults: fc.array(auth, { maxLength: 3 }),
  spfResults: fc.array(auth, { maxLength: 2 }),
});
const report = fc.record({
  v2: fc.boolean(),
  prefix: fc.constantFrom('', 'dmarc:'),
  pretty: fc.boolean(),
  comments: fc.boolean(),
  cdata: fc.boolean(),
  org: text.filter((s) => s.trim() !== ''),
  email: maybe(text),
  reportId: text.filter((s) => s.trim() !== ''),
  begin: digits,
  end: digits,
  domain: text.filter((s) => s.trim() !== ''),
  p: maybe(fc.constantFrom('none', 'Reject', 'quarantine')),
  sp: maybe(fc.constantFrom('none', 'reject')),
  np: maybe(fc.constantFrom('none', 'reject')),
  adkim: maybe(fc.constantFrom('r', 's', 'S')),
  aspf: maybe(fc.constantFrom('r', 's')),
  pct: maybe(fc.oneof(fc.nat(100).map(String), fc.constant('ten'))),
  testing: maybe(fc.constantFrom('y', 'n', 'Y')),
  records: fc.array(record, { maxLength: 8 }),
});

type Gen = typeof report extends fc.Arbitrary<infer R> ? R : never;

/** The report as XML, in the chosen schema, namespace spelling and layout. */
function xmlOf(r: Gen): string {
  const nl = r.pretty ? '\n  ' : '';
  const tag = (name: string, inner: string | undefined) => {
    if (inner === undefined) return '';
    const body = r.cdata && !/[\]<&]/.test(inner) && inner.length % 3 === 0 ? `<![CDATA[${inner}]]>` : inner;
    return `<${r.prefix}${name}>${body}</${r.prefix}${name}>${nl}`;
  };
  const group = (name: string, parts: string[]) => `<${r.prefix}${name}>${nl}${parts.join('')}</${r.prefix}${name}>${nl}`;
  const note = r.comments ? '<!-- a note -->' : '';
  const ns = r.v2 ? 'urn:ietf:params:xml:ns:dmarc-2.0' : 'http://dmarc.org/dmarc-xml/0.1';
  const xmlns = r.prefix ? ` xmlns:${r.prefix.slice(0, -1)}="${ns}"` : r.v2 ? ` xmlns="${ns}"` : '';
  const records = r.records.map((rec) =>
    group('record', [
      group('row', [
        tag('source_ip', rec.sourceIp),
        tag('count', rec.count),
        group('policy_evaluated', [
          tag('disposition', rec.disposition),
          tag('dkim', rec.dkim),
          tag('spf', rec.spf),
          ...rec.reasons.map((x) => group('reason', [tag('type', x.type), tag('comment', x.comment)])),
        ]),
      ]),
      group('identifiers', [tag('header_from', rec.headerFrom), tag('envelope_from', rec.envelopeFrom)]),
      note,
      group('auth_results', [
        ...rec.dkimResults.map((a) => group('dkim', [tag('domain', a.domain), tag('selector', a.selector), tag('result', a.result)])),
        ...rec.spfResults.map((a) => group('spf', [tag('domain', a.domain), tag('scope', a.scope), tag('result', a.result)])),
      ]),
    ]),
  );
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<${r.prefix}feedback${xmlns}>${nl}` +
    (r.v2 ? '' : tag('version', '1.0')) +
    group('report_metadata', [
      tag('org_name', r.org),
      tag('email', r.email),
      tag('report_id', r.reportId),
      group('date_range', [tag('begin', r.begin), tag('end', r.end)]),
    ]) +
    note +
    group('policy_published', [
      tag('domain', r.domain),
      tag('adkim', r.adkim),
      tag('aspf', r.aspf),
      tag('p', r.p),
      tag('sp', r.sp),
      tag('np', r.np),
      tag('pct', r.pct),
      tag('testing', r.testing),
    ]) +
    records.join('') +
    `</${r.prefix}feedback>\n`
  );
}

t.test('the streaming reader reads generated reports as the whole-document parser did', async (t) => {
  await holds(
    t,
    'whole reports, fed in pieces',
    fc.property(report, fc.array(fc.nat(), { maxLength: 12 }), (r, cuts) => {
      const xml = xmlOf(r);
      return same(streamed(xml, cuts), whole(xml));
    }),
  );
  await holds(
    t,
    'reports cut short anywhere',
    // Unprefixed: the old parser mended a cut document by looking for a literal `</record>`, so it
    // refused a prefixed one (`</dmarc:record>`) the reader keeps the whole records of.
    fc.property(report.map((r) => ({ ...r, prefix: '' as const })), fc.nat(), fc.array(fc.nat(), { maxLength: 6 }), (r, at, cuts) => {
      const xml = xmlOf(r);
      const cut = xml.slice(0, at % xml.length);
      return same(streamed(cut, cuts), whole(cut));
    }),
  );
});

t.test('the fixed reports, whole and cut at every character, read the same', async (t) => {
  for (const name of readdirSync(fixtures).filter((f) => f.endsWith('.xml'))) {
    const xml = readFileSync(path.join(fixtures, name), 'utf8');
    t.strictSame(streamed(xml, [1, 100, 101, 777]), whole(xml), name);
    let differ = 0;
    for (let at = 0; at < xml.length; at++) {
      const cut = xml.slice(0, at);
      if (!isDeepStrictEqual(streamed(cut, [at >> 1]), whole(cut))) differ++;
    }
    t.equal(differ, 0, `${name}: every cut reads the same`);
  }
});

t.test('the head is handed out before what follows it is read', async (t) => {
  const head =
    '<feedback><report_metadata><org_name>acme.com</org_name><report_id>r1</report_id><date_range><begin>1</begin><end>2</end></date_range></report_metadata><policy_published><domain>example.com</domain></policy_published>';
  const reader = new DmarcReader();
  reader.feed(head + '<record><row></broken></feedback>');
  t.match(reader.head, { org: 'acme.com', reportId: 'r1', domain: 'example.com' });
  const reason = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      return (err as ReportRefused).reason;
    }
    return 'read';
  };
  t.equal(
    reason(() => reader.resume()),
    'corrupt',
    'the break is seen once reading goes on',
  );
  t.equal(
    reason(() => new DmarcReader().feed('<!DOCTYPE feedback [<!ENTITY a "b">]><feedback/>')),
    'corrupt',
  );
  t.equal(
    reason(() => new DmarcReader().feed('<html/>')),
    'not-a-report',
  );
});
