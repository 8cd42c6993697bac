// The report address end to end: receivers mail DMARC and TLS reports to reports@<bounce domain>
// over SMTP; the daemon stores them once, keeps them out of the received-mail list, announces them
// to the workspace that owns the domain, and summarises them per domain and day over /v1. Hostile
// attachments are refused with a log line while the mail is still accepted.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { bounceDomainOf } from '../../src/domains/names.js';
import { dayRows } from '../../src/reports/dmarc.js';
import { REWRITE_AFTER_MS } from '../../src/reports/store.js';
import { UNPACKED_LIMIT } from '../../src/reports/unpack.js';
import { ManualClock } from '../helpers/clock.js';
import { testDatabases } from '../helpers/databases.js';
import { setup, transport, type InboundEnv } from '../helpers/inbound.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { zip } from '../helpers/zip.js';

const fixture = (name: string) =>
  readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'reports', name));

async function mailReport(env: InboundEnv, attachment: { filename: string; content: Buffer; contentType: string }): Promise<string> {
  const to = `reports@${bounceDomainOf(env.d.app.config)}`;
  const info = await transport(env.d.smtpPort).sendMail({
    from: 'noreply-dmarc-support@acme.com',
    to,
    subject: `Report Domain: example.com Submitter: acme.com`,
    text: 'This is an aggregate report.',
    attachments: [attachment],
  });
  return info.response;
}

for (const db of testDatabases())
t.test(`reports mailed to the report address are stored once, summarised and announced (${db})`, async (t) => {
  // 192.0.2.10 is this box's public address: its mail is "own", the rest "foreign".
  const env = await setup(t, { db, env: { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true', POSTERN_DOCTOR_PUBLIC_IPS: '192.0.2.10' } });
  const { d, ws } = env;
  const claimed = await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'example.com' } });
  t.equal(claimed.status, 201, JSON.stringify(claimed.body));
  const other = await d.workspace('other');
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const ep = await d.request('POST', '/v1/webhooks', { key: ws.live, body: { url: rx.url, events: ['report.dmarc', 'report.tls'] } });
  t.equal(ep.status, 201, JSON.stringify(ep.body));

  const rfc7489 = fixture('dmarc-rfc7489.xml');
  const reply = await mailReport(env, {
    filename: 'acme.com!example.com!1335571200!1335657599.zip',
    content: zip([{ name: 'acme.com!example.com!1335571200!1335657599.xml', data: rfc7489 }]),
    contentType: 'application/zip',
  });
  t.match(reply, /^250 /);
  // The same report again, gzipped by a forwarder: recognised, counted once.
  t.match(
    await mailReport(env, { filename: 'report.xml.gz', content: gzipSync(rfc7489), contentType: 'application/octet-stream' }),
    /^250 /,
  );
  t.match(
    await mailReport(env, {
      filename: 'company-x.example!example.com!1795219200!1795305599!5065427c.json.gz',
      content: gzipSync(fixture('tls-rfc8460.json')),
      contentType: 'application/tlsrpt+gzip',
    }),
    /^250 /,
  );

  const dmarc = await d.request('GET', '/v1/reports/dmarc?from=2012-04-28&to=2012-04-28', { key: ws.live });
  t.equal(dmarc.status, 200, JSON.stringify(dmarc.body));
  t.same(dmarc.body, {
    from: '2012-04-28',
    to: '2012-04-28',
    data: [
      {
        domain: 'example.com',
        day: '2012-04-28',
        messages: 125,
        passed: 120,
        passRate: 0.96,
        dispositions: { none: 125, quarantine: 0, reject: 0 },
        own: { messages: 123, passed: 120 },
        foreign: { messages: 2, passed: 0 },
        failingSources: { own: [{ ip: '192.0.2.10', count: 3 }], foreign: [{ ip: '198.51.100.7', count: 2 }] },
        reports: 1,
      },
    ],
  });
  const tls = await d.request('GET', '/v1/reports/tls?domain=example.com&from=2026-11-21&to=2026-11-21', { key: ws.live });
  t.equal(tls.status, 200, JSON.stringify(tls.body));
  t.same(tls.body.data, [
    {
      domain: 'example.com',
      day: '2026-11-21',
      successful: 5326,
      failed: 303,
      failures: { 'certificate-expired': 100, 'starttls-not-supported': 200, 'validation-failure': 3 },
      reports: 1,
    },
  ]);

  // Reports are not received mail, and another workspace sees nothing of them.
  const inbox = await d.request('GET', '/v1/inbound/messages', { key: ws.live });
  t.same(inbox.body.messages, []);
  t.equal(await d.app.db.selectFrom('inbound_raw').select('id').execute().then((r) => r.length), 0);
  const foreign = await d.request('GET', '/v1/reports/dmarc?from=2012-04-28&to=2012-04-28', { key: other.live });
  t.same(foreign.body.data, []);

  // One event per stored report (not for the duplicate), to the owning workspace.
  await rx.waitFor(2, 15_000);
  const events = rx.requests.map((r) => r.json).sort((a, b) => a.type.localeCompare(b.type));
  t.same(
    events.map((e) => e.type),
    ['report.dmarc', 'report.tls'],
  );
  t.match(events[0].data, { org: 'acme.com', reportId: '9391651994964116463', domains: ['example.com'], messages: 125, passed: 120 });
  t.match(events[1].data, { org: 'Company-X', domains: ['example.com'], successful: 5326, failed: 303 });
});

/** The reply to a mail, whether the server took it or not. */
const replyTo = (p: Promise<string>) => p.catch((err: Error & { response?: string }) => err.response ?? err.message);

t.test('a zip bomb and a broken report are refused and logged; the next report is stored', async (t) => {
  const env = await setup(t);
  const { d, ws } = env;
  await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'example.com' } });
  const bomb = zip([{ name: 'r.xml', data: Buffer.alloc(UNPACKED_LIMIT + 1024, 0x20) }]);
  // Too large to read: refused as a message over the size limit is, so the reporter learns it.
  t.match(
    await replyTo(mailReport(env, { filename: 'bomb.zip', content: bomb, contentType: 'application/zip' })),
    /^552 5\.3\.4 report too large to read: zip entry r\.xml declares/,
  );
  t.match(
    await mailReport(env, { filename: 'broken.xml', content: Buffer.from('<feedback><report_metadata>'), contentType: 'text/xml' }),
    /^250 /,
  );
  const refusals = d.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'report refused');
  t.same(
    refusals.map((l) => [l.attachment, l.reason]),
    [
      ['bomb.zip', 'too-large'],
      ['broken.xml', 'corrupt'],
    ],
  );
  // A report cut short keeps its whole records.
  const text = fixture('dmarc-rfc7489.xml').toString();
  const cut = Buffer.from(text.slice(0, text.indexOf('<source_ip>198.51.100.7')));
  t.match(await mailReport(env, { filename: 'cut.xml', content: cut, contentType: 'text/xml' }), /^250 /);
  const dmarc = await d.request('GET', '/v1/reports/dmarc?from=2012-04-28&to=2012-04-28', { key: ws.live });
  t.equal(dmarc.body.data[0].messages, 123);
});

t.test('the summary query is checked', async (t) => {
  const env = await setup(t);
  const { d, ws } = env;
  for (const [q, status, message] of [
    ['from=2026-11-22&to=2026-11-21', 400, 'from: must not be after to'],
    ['from=2024-01-01&to=2026-01-01', 400, 'at most 366 days'],
    ['from=yesterday', 400, 'from'],
    ['domain=not-mine.example', 404, 'domain not-mine.example not found'],
    ['colour=blue', 400, 'colour'],
  ] as const) {
    for (const kind of ['dmarc', 'tls']) {
      const res = await d.request('GET', `/v1/reports/${kind}?${q}`, { key: ws.live });
      t.equal(res.status, status, `${kind} ${q}`);
      t.match(res.body.error.message, message);
    }
  }
  const fine = await d.request('GET', '/v1/reports/dmarc', { key: ws.live });
  t.equal(fine.status, 200);
  t.same(fine.body.data, []);
});

/** A DMARC report of `records` records (one source each), as receivers write them. */
function dmarcXml(reportId: string, records: number, body = ''): string {
  const rows = Array.from(
    { length: records },
    (_, i) =>
      `<record><row><source_ip>198.51.100.${i % 250}</source_ip><count>1</count><policy_evaluated><disposition>none</disposition><dkim>pass</dkim><spf>fail</spf></policy_evaluated></row><identifiers><header_from>example.com</header_from></identifiers><auth_results><dkim><domain>example.com</domain><result>pass</result></dkim></auth_results></record>`,
  ).join('');
  return `<?xml version="1.0"?><feedback><report_metadata><org_name>acme.com</org_name><email>d@acme.com</email><report_id>${reportId}</report_id><date_range><begin>1335571200</begin><end>1335657599</end></date_range></report_metadata><policy_published><domain>example.com</domain><p>none</p></policy_published>${rows}${body}</feedback>`;
}

const xmlAttachment = (name: string, xml: string) => ({ filename: name, content: gzipSync(xml), contentType: 'application/gzip' });
const messagesOn = async (env: InboundEnv) =>
  (await env.d.request('GET', '/v1/reports/dmarc?from=2012-04-28&to=2012-04-28', { key: env.ws.live })).body.data[0]?.messages ?? 0;

for (const db of testDatabases())
  t.test(`reports over reports.maxRows are refused with 552 and leave nothing; duplicates are known by their head (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_REPORTS_MAX_ROWS: '1500' } });
    const { d, ws } = env;
    await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'example.com' } });
    // 1,501 records: past the cap after a batch of 1,000 was written, which is cleared again.
    t.match(
      await replyTo(mailReport(env, xmlAttachment('big.xml.gz', dmarcXml('big', 1501)))),
      /^552 5\.3\.4 report too large to read: the report holds more than 1500 records \(reports\.maxRows\)/,
    );
    t.equal((await d.app.db.selectFrom('dmarc_report_rows').select('id').execute()).length, 0, 'no record of it is left');
    t.equal((await d.app.db.selectFrom('dmarc_reports').select('id').execute()).length, 0);
    t.match(await mailReport(env, xmlAttachment('ok.xml.gz', dmarcXml('ok', 1500))), /^250 /);
    t.equal(await messagesOn(env), 1500);
    // The same report again, its records broken past the head: a duplicate, known before any record is read.
    const again = dmarcXml('ok', 0, '<record><row><source_ip>1.2.3.4</source_ip></row></broken>');
    t.match(await mailReport(env, xmlAttachment('again.xml.gz', again)), /^250 /);
    const logs = d.logs.map((l) => JSON.parse(l));
    t.equal(logs.filter((l) => l.msg === 'report already stored').length, 1);
    t.same(
      logs.filter((l) => l.msg === 'report refused').map((l) => l.reason),
      ['too-many-rows'],
    );
    t.equal(await messagesOn(env), 1500);
  });

for (const db of testDatabases())
  t.test(`a report left half-written is never shown, and is written anew by a later copy (${db})`, async (t) => {
    const clock = new ManualClock('2026-11-28T00:00:00Z');
    const env = await setup(t, { db, clock });
    const { d, ws } = env;
    await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'example.com' } });
    // A daemon stopped part way through a report: begun, a batch written, never finished.
    const xml = dmarcXml('half', 3);
    const { parseDmarcReport } = await import('../helpers/report-documents.js');
    const whole = parseDmarcReport(xml);
    const begun = await d.app.reports.store.beginDmarc(whole);
    t.equal(begun.kind, 'new');
    await d.app.reports.store.addDmarcRows(begun.id, dayRows(whole, whole.records.slice(0, 2)));
    t.equal(await messagesOn(env), 0, 'the summaries do not read it');
    // A copy soon after: the first writer may still be at it, so the sender comes back later.
    t.match(await replyTo(mailReport(env, xmlAttachment('half.xml.gz', xml))), /^451 4\.3\.0 this report is being stored from another copy/);
    clock.advance(REWRITE_AFTER_MS + 1000);
    t.match(await mailReport(env, xmlAttachment('half.xml.gz', xml)), /^250 /);
    t.equal(await messagesOn(env), 3, 'written once, whole');
    t.equal((await d.app.db.selectFrom('dmarc_report_rows').select('id').execute()).length, 3);
  });
