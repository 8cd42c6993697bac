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
import { UNPACKED_LIMIT } from '../../src/reports/unpack.js';
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
  const env = await setup(t, { db, env: { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
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
        own: { messages: 0, passed: 0 },
        foreign: { messages: 125, passed: 120 },
        failingSources: {
          own: [],
          foreign: [
            { ip: '192.0.2.10', count: 3 },
            { ip: '198.51.100.7', count: 2 },
          ],
        },
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

t.test('a zip bomb and a broken report are refused and logged; the next report is stored', async (t) => {
  const env = await setup(t);
  const { d, ws } = env;
  await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'example.com' } });
  const bomb = zip([{ name: 'r.xml', data: Buffer.alloc(UNPACKED_LIMIT + 1024, 0x20) }]);
  t.match(await mailReport(env, { filename: 'bomb.zip', content: bomb, contentType: 'application/zip' }), /^250 /);
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
