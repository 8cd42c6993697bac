// Reading reports as receivers send them (RFC 7489 appendix C, the DMARC 2.0 schema of RFC 9990,
// RFC 8460 section 4), in every container they use, and refusing the hostile ones: bombs, entity
// expansion, broken documents beyond repair.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { dailyCounts } from '../../src/reports/dmarc.js';
import { parseTlsReport } from '../../src/reports/tls.js';
import { ReportRefused, UNPACKED_LIMIT, ZIP_ENTRY_LIMIT } from '../../src/reports/unpack.js';
import { parseDmarcReport, unpackReport } from '../helpers/report-documents.js';
import { zip } from '../helpers/zip.js';

const fixture = (name: string) =>
  readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'reports', name));
const rfc7489 = fixture('dmarc-rfc7489.xml');

async function refused(p: Promise<unknown> | (() => unknown)): Promise<ReportRefused> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    if (err instanceof ReportRefused) return err;
    throw err;
  }
  throw new Error('not refused');
}

t.test('the RFC 7489 example, plain, gzip and zip, reads the same', async (t) => {
  for (const [what, content] of [
    ['xml', rfc7489],
    ['gzip', gzipSync(rfc7489)],
    ['zip', zip([{ name: 'acme.com!example.com!1335571200!1335657599.xml', data: rfc7489 }])],
  ] as const) {
    const doc = await unpackReport(Buffer.from(content));
    t.equal(doc.format, 'xml', what);
    const r = parseDmarcReport(doc.text);
    t.equal(r.schema, 'rfc7489');
    t.equal(r.org, 'acme.com');
    t.equal(r.reportId, '9391651994964116463');
    t.equal(r.begin.toISOString(), '2012-04-28T00:00:00.000Z');
    t.equal(r.domain, 'example.com');
    t.same(r.policy, { p: 'none', sp: 'none', np: null, adkim: 'r', aspf: 'r', pct: 100, testing: false });
    t.equal(r.records.length, 3);
    t.same(
      r.records.map((x) => [x.sourceIp, x.count, x.dkim, x.spf, x.headerFrom]),
      [
        ['192.0.2.10', 120, 'pass', 'fail', 'example.com'],
        ['192.0.2.10', 3, 'fail', 'fail', 'example.com'],
        ['198.51.100.7', 2, 'fail', 'fail', 'example.com'],
      ],
    );
    t.same(r.records[0].dkimResults, [{ domain: 'example.com', selector: 'pst1', result: 'pass' }]);
    t.same(r.records[2].reasons, ['forwarded']);
    t.equal(r.partial, false);
  }
});

t.test('the DMARC 2.0 schema (RFC 9990): namespace, np, testing, mixed case normalised', async (t) => {
  const r = parseDmarcReport(fixture('dmarc-rfc9990.xml').toString());
  t.equal(r.schema, 'rfc9990');
  t.equal(r.domain, 'example.com');
  t.same(r.policy, { p: 'quarantine', sp: 'none', np: 'reject', adkim: 's', aspf: 'r', pct: null, testing: false });
  t.same(r.records[0], {
    sourceIp: '2001:db8::25',
    count: 40,
    disposition: 'none',
    dkim: 'pass',
    spf: 'pass',
    headerFrom: 'example.com',
    envelopeFrom: 'bounces.example.com',
    dkimResults: [{ domain: 'example.com', selector: 'pst1', result: 'pass' }],
    spfResults: [{ domain: 'bounces.example.com', scope: 'mfrom', result: 'pass' }],
    reasons: [],
  });
  t.equal(r.records[1].disposition, 'quarantine');
});

t.test('a document cut short keeps the records that arrived whole', async (t) => {
  const text = rfc7489.toString();
  const cut = text.slice(0, text.indexOf('<source_ip>198.51.100.7'));
  const r = parseDmarcReport(cut);
  t.equal(r.partial, true);
  t.equal(r.records.length, 2);
  t.equal(r.records[1].count, 3);
  const beyond = await refused(() => parseDmarcReport(text.slice(0, text.indexOf('<record>') + 20)));
  t.equal(beyond.reason, 'corrupt');
  const junk = await refused(() => parseDmarcReport('<html><body>not a report</body></html>'));
  t.equal(junk.reason, 'not-a-report');
});

t.test('entity declarations are refused, never expanded', async (t) => {
  const laughs =
    '<?xml version="1.0"?><!DOCTYPE feedback [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>' +
    rfc7489.toString().replace('<?xml version="1.0" encoding="UTF-8" ?>', '').replace('acme.com</org_name>', '&lol2;</org_name>');
  t.equal((await refused(() => parseDmarcReport(laughs))).reason, 'corrupt');
  const external = '<?xml version="1.0"?><!DOCTYPE feedback [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><feedback>&xxe;</feedback>';
  t.equal((await refused(() => parseDmarcReport(external))).reason, 'corrupt');
});

t.test('bombs and strange containers are refused with a reason', async (t) => {
  const zeros = Buffer.alloc(UNPACKED_LIMIT + 1024 * 1024, 0x20);
  t.equal((await refused(unpackReport(gzipSync(zeros)))).reason, 'too-large', 'gzip bomb');
  t.equal((await refused(unpackReport(zip([{ name: 'r.xml', data: zeros }])))).reason, 'too-large', 'zip bomb');
  // Headers claiming a small entry do not get past the byte budget either.
  const liar = await refused(unpackReport(zip([{ name: 'r.xml', data: zeros, declaredSize: 1000 }])));
  t.ok(['too-large', 'corrupt'].includes(liar.reason), liar.message);
  const many = zip(Array.from({ length: ZIP_ENTRY_LIMIT + 1 }, (_, i) => ({ name: `r${i}.xml`, data: rfc7489 })));
  t.equal((await refused(unpackReport(many))).reason, 'too-many-entries');
  t.equal((await refused(unpackReport(zip([{ name: 'readme.txt', data: Buffer.from('hi') }])))).reason, 'not-a-report');
  t.equal((await refused(unpackReport(Buffer.from('PK\x03\x04garbage')))).reason, 'corrupt');
  t.equal((await refused(unpackReport(Buffer.from([0x1f, 0x8b, 1, 2, 3])))).reason, 'corrupt');
  t.equal((await refused(unpackReport(Buffer.from('%PDF-1.4')))).reason, 'not-a-report');
});

t.test('a report over more than a day is split into daily buckets that add up', async (t) => {
  const begin = new Date('2026-11-20T12:00:00Z');
  const end = new Date('2026-11-23T00:00:00Z');
  t.same(dailyCounts({ begin, end }, 100), [
    { day: '2026-11-20', count: 20 },
    { day: '2026-11-21', count: 40 },
    { day: '2026-11-22', count: 40 },
  ]);
  const odd = dailyCounts({ begin, end }, 7);
  t.equal(
    odd.reduce((a, d) => a + d.count, 0),
    7,
  );
  t.same(dailyCounts({ begin: new Date('2026-11-21T00:00:00Z'), end: new Date('2026-11-21T23:59:59Z') }, 9), [{ day: '2026-11-21', count: 9 }]);
  // A day-long report starting at noon counts on the day it began.
  t.same(dailyCounts({ begin, end: new Date('2026-11-21T12:00:00Z') }, 5), [{ day: '2026-11-20', count: 5 }]);
});

t.test('the RFC 8460 TLS report, plain and gzip', async (t) => {
  const json = fixture('tls-rfc8460.json');
  for (const content of [json, gzipSync(json)]) {
    const doc = await unpackReport(content);
    t.equal(doc.format, 'json');
    const r = parseTlsReport(doc.text);
    t.equal(r.org, 'Company-X');
    t.equal(r.reportId, '5065427c-23d3-47ca-b6e0-946ea0e8c4be');
    t.equal(r.policies.length, 1);
    t.same(
      { ...r.policies[0], failures: r.policies[0].failures.map((f) => [f.resultType, f.count]) },
      {
        type: 'sts',
        domain: 'example.com',
        mxHosts: ['*.mail.example.com'],
        successful: 5326,
        failed: 303,
        failures: [
          ['certificate-expired', 100],
          ['starttls-not-supported', 200],
          ['validation-failure', 3],
        ],
      },
    );
  }
  t.equal((await refused(() => parseTlsReport('{"hello":1}'))).reason, 'not-a-report');
  t.equal((await refused(() => parseTlsReport('{"organization-name":'))).reason, 'corrupt');
});
