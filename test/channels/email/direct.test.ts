// smtp-direct against real loopback peers: an smtp-server as the remote MX and a DNS server on
// loopback answering MX/A/TXT for the recipient and sender domains.
import t from 'tap';
import { simpleParser } from 'mailparser';
import { createSuppressionStore } from '../../../src/suppressions/store.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
// mailauth ships no type declarations; only authenticate() is used.
const { authenticate } = (await import('mailauth')) as { authenticate: (raw: Buffer, opts: object) => Promise<any> };
import { addVerifiedDomain, emailTransport, makeDelivery, selfSignedCert, startSink } from '../../helpers/smtp-sink.js';

for (const db of testDatabases()) {
  t.test(`direct delivery on ${db}`, async (t) => {
    const tls = selfSignedCert();
    let rcptRule: (a: string) => { code: number; message: string } | undefined = () => undefined;
    const sink = await startSink(t, { tls, rcpt: (a) => rcptRule(a) });
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
      'other.org': [{ type: 'A', data: '127.0.0.1' }],
      'nullmx.org': [{ type: 'MX', data: { preference: 0, exchange: '.' } }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_DELIVERY_PORT: String(sink.port),
        POSTERN_DELIVERY_FROM_ADDRESS: 'noreply@postern.test',
        POSTERN_DELIVERY_FROM_NAME: 'Postern',
        POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const app = d.app;
    const suppressions = createSuppressionStore(app);
    const transport = emailTransport(t, app, { suppressions });
    const dkimTxt = await addVerifiedDomain(app, ws.id, 'acme.example');
    dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: dkimTxt }]);

    t.test('delivers with STARTTLS, VERP, Message-ID, DKIM that verifies', async (t) => {
      const dl = makeDelivery(app, ws.id, {
        fromOverride: 'news@acme.example',
        fromNameOverride: 'Acmé News',
        cc: ['carol@other.org'],
        bcc: ['bob@example.net'],
        replyTo: 'help@acme.example',
        attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('attached').toString('base64') }],
      });
      const before = sink.received.length;
      const out = await transport.deliver(dl);
      t.match(out, { kind: 'delivered', provider: 'smtp-direct', providerMessageId: `<${dl.message.publicId}@mx.postern.test>` });
      t.match(out.providerConnectionId, /^[0-9a-f-]{36}$/);
      t.equal(out.notes?.length, 3, 'one note per recipient');
      const got = sink.received.slice(before);
      t.equal(got.length, 2, 'one transaction per recipient domain');
      const forNet = got.find((g) => g.to.includes('alice@example.net'))!;
      t.same(forNet.to.sort(), ['alice@example.net', 'bob@example.net']);
      t.equal(forNet.from, `bounces+${dl.message.publicId}@bounces.mx.postern.test`);
      t.ok(forNet.secure, 'STARTTLS was used');
      const parsed = await simpleParser(forNet.raw);
      t.equal(parsed.from?.value[0].address, 'news@acme.example');
      t.equal(parsed.from?.value[0].name, 'Acmé News');
      t.equal(parsed.messageId, `<${dl.message.publicId}@mx.postern.test>`);
      t.equal(parsed.headers.get('bcc'), undefined, 'no Bcc header');
      t.match(forNet.raw.toString(), /^Cc: carol@other\.org/m);
      t.equal((parsed.replyTo as any)?.value[0].address, 'help@acme.example');
      t.equal(parsed.attachments[0].content.toString(), 'attached');
      const auth = await authenticate(forNet.raw, {
        ip: '127.0.0.1',
        helo: 'mx.postern.test',
        sender: forNet.from,
        mta: 'mx.example.net',
        resolver: app.dns.resolve as any,
      });
      t.equal(auth.dkim.results[0].status.result, 'pass', 'mailauth verifies the DKIM signature');
      t.equal(auth.dkim.results[0].signingDomain, 'acme.example');
    });

    t.test('an unverified from falls back to the connection default, unsigned', async (t) => {
      const dl = makeDelivery(app, ws.id, { fromOverride: 'spoof@bank.example' });
      const before = sink.received.length;
      const out = await transport.deliver(dl);
      t.equal(out.kind, 'delivered');
      const parsed = await simpleParser(sink.received[before].raw);
      t.equal(parsed.from?.value[0].address, 'noreply@postern.test');
      t.equal(parsed.from?.value[0].name, 'Postern');
      t.notOk(parsed.headers.get('dkim-signature'));
    });

    t.test('5xx fails and suppresses; 4xx defers, and the retry skips accepted recipients', async (t) => {
      rcptRule = (a) =>
        a === 'gone@example.net'
          ? { code: 550, message: '5.1.1 no such user' }
          : a === 'busy@other.org'
            ? { code: 451, message: '4.3.0 try later' }
            : undefined;
      const failed = makeDelivery(app, ws.id, { recipient: 'gone@example.net' });
      const out = await transport.deliver(failed);
      t.match(out, { kind: 'failed', suppress: true, error: /550 5\.1\.1 no such user/ });
      t.match(await suppressions.get({ workspaceId: ws.id, livemode: true }, 'gone@example.net'), { reason: 'bounce' });

      const dl = makeDelivery(app, ws.id, { recipient: 'busy@other.org', cc: ['alice@example.net'] });
      const before = sink.received.length;
      const first = await transport.deliver(dl);
      t.match(first, { kind: 'deferred', error: /451 4\.3\.0 try later/ });
      t.equal(sink.received.length, before + 1, 'the cc on another domain got it');
      rcptRule = () => undefined;
      const second = await transport.deliver({ ...dl, message: { ...dl.message, attempt: 2 } });
      t.equal(second.kind, 'delivered');
      t.equal(sink.received.length, before + 2);
      t.same(sink.received[before + 1].to, ['busy@other.org'], 'the retry went only to the deferred recipient');
      const third = await transport.deliver({ ...dl, message: { ...dl.message, attempt: 3 } });
      t.equal(third.kind, 'delivered', 'a repeat after success sends nothing');
      t.equal(sink.received.length, before + 2);
    });

    t.test('null MX and NXDOMAIN are suppressed without a connection', async (t) => {
      const before = sink.received.length;
      t.match(await transport.deliver(makeDelivery(app, ws.id, { recipient: 'x@nullmx.org' })), { kind: 'suppressed', error: /null MX/ });
      t.match(await transport.deliver(makeDelivery(app, ws.id, { recipient: 'x@nowhere.invalid' })), {
        kind: 'suppressed',
        error: /NXDOMAIN/,
      });
      t.equal(sink.received.length, before);
    });

    t.test('a DATA 5xx fails without suppressing the address', async (t) => {
      // A second sink that rejects content.
      const picky = await startSink(t, {
        host: '127.0.0.4',
        port: sink.port,
        data: () => ({ code: 554, message: '5.7.1 content rejected' }),
      });
      dns.set('picky.org', [{ type: 'MX', data: { preference: 5, exchange: 'mx.picky.org' } }]);
      dns.set('mx.picky.org', [{ type: 'A', data: '127.0.0.4' }]);
      const out = await transport.deliver(makeDelivery(app, ws.id, { recipient: 'x@picky.org' }));
      t.match(out, { kind: 'failed', suppress: false, error: /554 5\.7\.1/ });
      t.equal(picky.received.length, 0);
    });
  });
}

t.test('MX hosts are tried in preference order; an unreachable primary falls back', async (t) => {
  const backup = await startSink(t, { host: '127.0.0.3' });
  const dns = await startDnsServer({
    'fallback.org': [
      { type: 'MX', data: { preference: 20, exchange: 'mx2.fallback.org' } },
      { type: 'MX', data: { preference: 10, exchange: 'mx1.fallback.org' } },
    ],
    'mx1.fallback.org': [{ type: 'A', data: '127.0.0.2' }],
    'mx2.fallback.org': [{ type: 'A', data: '127.0.0.3' }],
  });
  t.teardown(() => dns.close());
  const d = await bootDaemon(t, { env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(backup.port) } });
  const ws = await d.workspace('acme');
  const app = d.app;
  const transport = emailTransport(t, app);
  const out = await transport.deliver(makeDelivery(app, ws.id, { recipient: 'u@fallback.org' }));
  t.equal(out.kind, 'delivered');
  t.equal(backup.received.length, 1);
  const aQueries = dns.queries.filter((q) => q.startsWith('A mx'));
  t.same(aQueries, ['A mx1.fallback.org', 'A mx2.fallback.org'], 'resolved in preference order');
  t.match(out.notes?.[0], /mx2\.fallback\.org/);
});

t.test('a message larger than the MX accepts (its SIZE) fails at once instead of being retried', async (t) => {
  const small = await startSink(t, { host: '127.0.0.5', size: 2000 });
  const dns = await startDnsServer({
    'small.org': [{ type: 'MX', data: { preference: 10, exchange: 'mx.small.org' } }],
    'mx.small.org': [{ type: 'A', data: '127.0.0.5' }],
  });
  t.teardown(() => dns.close());
  const d = await bootDaemon(t, { env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(small.port) } });
  const ws = await d.workspace('acme', { plan: 'pro' });
  const r = await d.request('POST', '/v1/send-raw', {
    key: ws.live,
    body: { to: 'u@small.org', channel: 'email', content: { subject: 'Big', text: 'x'.repeat(5000) } },
  });
  await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
  const m = (await d.request('GET', `/v1/messages/${r.body.id}`, { key: ws.live })).body;
  t.match(m, { status: 'failed', error: /mx\.small\.org: .*size larger than allowed 2000/i });
  t.notOk(
    m.timeline.some((e: { e: string }) => e.e === 'deferred'),
    'not deferred',
  );
  t.equal(small.received.length, 0);
  t.same((await d.request('GET', '/v1/suppressions', { key: ws.live })).body.data, [], 'the address is fine: not suppressed');
});
