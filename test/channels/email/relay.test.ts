// smtp-relay: every message goes to one smarthost (a second smtp-server with AUTH) through a pool;
// its 250 makes the message `sent`; a 5xx from the relay fails it. The relay's settings all apply:
// the EHLO name, connection reuse, `delivery.tls` (STARTTLS, implicit TLS, certificate checks with
// `delivery.relayCaFile`) and the credentials in the URL.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { Config } from '../../../src/config.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { makeTestCa } from '../../helpers/self-signed.js';
import { emailTransport, makeDelivery, startSink, type SinkOptions } from '../../helpers/smtp-sink.js';

for (const db of testDatabases()) {
  t.test(`relay mode sends through the smarthost with credentials (${db})`, async (t) => {
    const relay = await startSink(t, {
      auth: { user: 'postern', pass: 's3cret' },
      rcpt: (a) => (a.startsWith('bad@') ? { code: 550, message: '5.1.1 unknown' } : undefined),
    });
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DELIVERY_MODE: 'relay',
        POSTERN_DELIVERY_RELAY_URL: `smtp://postern:s3cret@127.0.0.1:${relay.port}`,
        POSTERN_DELIVERY_TLS: 'none',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const tick = () => d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const send = (to: string, extra: object = {}) =>
      d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to, channel: 'email', content: { subject: 'Relayed', text: 'hello' }, ...extra },
      });

    const ok = await send('someone@anywhere.example', { cc: ['other@elsewhere.example'], bcc: ['hidden@anywhere.example'] });
    t.equal(ok.status, 202);
    await tick();
    const m = (await d.request('GET', `/v1/messages/${ok.body.id}`, { key: ws.live })).body;
    t.match(m, { status: 'sent', provider: 'smtp-relay', providerMessageId: `<${ok.body.id}@mx.postern.test>` });
    t.equal(relay.received.length, 1, 'one transaction for all recipients');
    t.same(relay.received[0].to.sort(), ['hidden@anywhere.example', 'other@elsewhere.example', 'someone@anywhere.example']);
    t.equal(relay.received[0].from, `bounces+${ok.body.id}@bounces.mx.postern.test`);
    t.notMatch(relay.received[0].raw.toString(), /^Bcc:/m);

    const bad = await send('bad@anywhere.example');
    await tick();
    t.match((await d.request('GET', `/v1/messages/${bad.body.id}`, { key: ws.live })).body, {
      status: 'failed',
      error: /550 5\.1\.1 unknown/,
    });
  });

  t.test(`the relay pool: EHLO with hostname, the URL credentials, connections reused and capped (${db})`, async (t) => {
    const relay = await startSink(t, { auth: { user: 'postern', pass: 'p@ss:word' } });
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DELIVERY_MODE: 'relay',
        POSTERN_DELIVERY_RELAY_URL: `smtp://postern:${encodeURIComponent('p@ss:word')}@127.0.0.1:${relay.port}`,
        POSTERN_DELIVERY_TLS: 'none',
        POSTERN_DELIVERY_MAX_CONNECTIONS: '2',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const tick = () => d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const send = (i: number) =>
      d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to: `u${i}@anywhere.example`, channel: 'email', content: { subject: `m${i}`, text: 'hi' } },
      });

    for (let i = 0; i < 10; i++) {
      await send(i);
      await tick();
    }
    t.equal(relay.received.length, 10);
    t.equal(relay.connections(), 1, 'ten messages one after the other share one connection');
    t.ok(
      relay.received.every((r) => r.ehlo === 'mx.postern.test'),
      'EHLO names the host (hostname)',
    );
    t.ok(
      relay.received.every((r) => r.user === 'postern'),
      'authenticated with the user and password of the URL',
    );

    for (let i = 10; i < 20; i++) await send(i);
    await tick();
    t.equal(relay.received.length, 20);
    t.ok(relay.connections() <= 2, `ten messages at once: at most delivery.maxConnections open (${relay.connections()} in all)`);
  });

  t.test(`delivery.tls and delivery.relayCaFile against relays with STARTTLS, implicit TLS and none (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const app = d.app;
    const ca = makeTestCa();
    const leaf = ca.issue(['127.0.0.1']);
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-relay-ca-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const caFile = path.join(dir, 'relay-ca.pem');
    writeFileSync(caFile, ca.cert);
    const auth = { user: 'postern', pass: 's3cret' };

    const relayTransport = (t: Test, delivery: Partial<Config['delivery']>) => {
      const config: Config = { ...app.config, delivery: { ...app.config.delivery, mode: 'relay', ...delivery } };
      return emailTransport(t, app, { config });
    };

    const cases: {
      name: string;
      sink: SinkOptions;
      scheme: 'smtp' | 'smtps';
      tls: Config['delivery']['tls'];
      ca: boolean;
      pass?: string;
      expect: 'sent' | 'deferred';
      secure?: boolean;
      error?: RegExp;
    }[] = [
      {
        name: 'STARTTLS, opportunistic: encrypted, the unknown CA accepted',
        sink: { tls: leaf },
        scheme: 'smtp',
        tls: 'opportunistic',
        ca: false,
        expect: 'sent',
        secure: true,
      },
      {
        name: 'STARTTLS, verify, CA unknown: deferred',
        sink: { tls: leaf },
        scheme: 'smtp',
        tls: 'verify',
        ca: false,
        expect: 'deferred',
        error: /certificate/i,
      },
      {
        name: 'STARTTLS, verify, CA in relayCaFile: encrypted',
        sink: { tls: leaf },
        scheme: 'smtp',
        tls: 'verify',
        ca: true,
        expect: 'sent',
        secure: true,
      },
      {
        name: 'STARTTLS, require, CA in relayCaFile: encrypted',
        sink: { tls: leaf },
        scheme: 'smtp',
        tls: 'require',
        ca: true,
        expect: 'sent',
        secure: true,
      },
      {
        name: 'STARTTLS offered, none: plain text',
        sink: { tls: leaf },
        scheme: 'smtp',
        tls: 'none',
        ca: false,
        expect: 'sent',
        secure: false,
      },
      {
        name: 'no STARTTLS, require: deferred, nothing in plain text',
        sink: {},
        scheme: 'smtp',
        tls: 'require',
        ca: true,
        expect: 'deferred',
        error: /STARTTLS/i,
      },
      { name: 'no STARTTLS, verify: plain text', sink: {}, scheme: 'smtp', tls: 'verify', ca: true, expect: 'sent', secure: false },
      {
        name: 'no STARTTLS, opportunistic: plain text',
        sink: {},
        scheme: 'smtp',
        tls: 'opportunistic',
        ca: false,
        expect: 'sent',
        secure: false,
      },
      {
        name: 'smtps, verify, CA in relayCaFile: encrypted',
        sink: { tls: leaf, secure: true },
        scheme: 'smtps',
        tls: 'verify',
        ca: true,
        expect: 'sent',
        secure: true,
      },
      {
        name: 'smtps, require, CA unknown: deferred',
        sink: { tls: leaf, secure: true },
        scheme: 'smtps',
        tls: 'require',
        ca: false,
        expect: 'deferred',
        error: /certificate/i,
      },
      {
        name: 'smtps, opportunistic, CA unknown: encrypted',
        sink: { tls: leaf, secure: true },
        scheme: 'smtps',
        tls: 'opportunistic',
        ca: false,
        expect: 'sent',
        secure: true,
      },
      {
        name: 'wrong password (535): deferred, as Postfix does',
        sink: { tls: leaf },
        scheme: 'smtp',
        tls: 'verify',
        ca: true,
        pass: 'wrong',
        expect: 'deferred',
        error: /535/,
      },
    ];
    for (const c of cases) {
      t.test(c.name, async (t) => {
        const sink = await startSink(t, { auth, ...c.sink });
        const url = `${c.scheme}://postern:${c.pass ?? auth.pass}@127.0.0.1:${sink.port}`;
        const transport = relayTransport(t, { relayUrl: url, tls: c.tls, relayCaFile: c.ca ? caFile : '' });
        const out = await transport.deliver(makeDelivery(app, ws.id, { recipient: 'someone@anywhere.example' }));
        t.equal(out.kind, c.expect, JSON.stringify(out));
        if (c.expect === 'sent') {
          t.equal(sink.received.length, 1);
          t.equal(sink.received[0].secure, c.secure, c.secure ? 'encrypted' : 'plain text');
          t.equal(sink.received[0].ehlo, 'mx.postern.test');
          t.equal(sink.received[0].user, 'postern');
        } else {
          t.equal(sink.received.length, 0, 'nothing was sent');
          t.match((out as { error: string }).error, c.error);
        }
      });
    }
  });

  t.test(`the relay's name is looked up through dns.servers, not the system's resolver (${db})`, async (t) => {
    const relay = await startSink(t);
    // The name exists only in the configured resolver's zone: the system's resolvers and /etc/hosts
    // do not know it.
    const dns = await startDnsServer({ 'relay.postern.test': [{ type: 'A', data: '127.0.0.1' }] });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_DELIVERY_MODE: 'relay',
        POSTERN_DELIVERY_RELAY_URL: `smtp://relay.postern.test:${relay.port}`,
        POSTERN_DELIVERY_TLS: 'none',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const r = await d.request('POST', '/v1/send-raw', {
      key: ws.live,
      body: { to: 'someone@anywhere.example', channel: 'email', content: { subject: 'Relayed', text: 'hello' } },
    });
    t.equal(r.status, 202);
    await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    t.match((await d.request('GET', `/v1/messages/${r.body.id}`, { key: ws.live })).body, { status: 'sent', provider: 'smtp-relay' });
    t.equal(relay.received.length, 1, 'the relay named only in dns.servers got it');
  });
}
