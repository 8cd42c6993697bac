// `delivery.tls` in direct mode, against loopback MX hosts found through the loopback DNS server
// (docs/email-delivery.md, "TLS policy"). Direct delivery verifies certificates against the
// system's CAs and those of NODE_EXTRA_CA_CERTS, which Node reads only at start, so each policy
// runs the real binary with a test CA there, as an operator with a private CA would. One sink
// presents, per MX name (SNI), a certificate from that CA for the name, one from the CA for another
// name, and one from a CA nobody trusts; a second sink, on another loopback address and the same
// port, offers no STARTTLS. Under `verify` a bad certificate defers and no STARTTLS is plain text;
// under `require` no STARTTLS defers too; a good certificate delivers encrypted under both.
import t, { type Test } from 'tap';
import { startDnsServer } from '../../helpers/dns-server.js';
import { spawnDaemonTrusting } from '../../helpers/run-bin.js';
import { makeTestCa } from '../../helpers/self-signed.js';
import { startSink, type Sink } from '../../helpers/smtp-sink.js';
import { sqliteOnly } from '../../helpers/databases.js';
import { until } from '../../helpers/until.js';

sqliteOnly(
  'the TLS policy of direct delivery (the real binary, for NODE_EXTRA_CA_CERTS); what a delivery stores runs on both in direct.test.ts',
);

interface Message {
  status: string;
  error: string | null;
  timeline: { e: string }[];
}

const ca = makeTestCa();
const rogue = makeTestCa('Nobody Trusts This CA');
const good = ca.issue(['mx.good.test']);

async function mxHosts(t: Test): Promise<{ tlsSink: Sink; plainSink: Sink; dns: string }> {
  const tlsSink = await startSink(t, {
    tls: good,
    sni: { 'mx.good.test': good, 'mx.wrong.test': ca.issue(['mx.elsewhere.test']), 'mx.rogue.test': rogue.issue(['mx.rogue.test']) },
  });
  // The same port on another loopback address: delivery.port is one for every MX.
  const plainSink = await startSink(t, { host: '127.0.0.7', port: tlsSink.port });
  const zone: Parameters<typeof startDnsServer>[0] = {};
  for (const [domain, address] of [
    ['good', '127.0.0.1'],
    ['wrong', '127.0.0.1'],
    ['rogue', '127.0.0.1'],
    ['plain', '127.0.0.7'],
  ]) {
    zone[`${domain}.test`] = [{ type: 'MX', data: { preference: 10, exchange: `mx.${domain}.test` } }];
    zone[`mx.${domain}.test`] = [{ type: 'A', data: address }];
  }
  const dns = await startDnsServer(zone);
  t.teardown(() => dns.close());
  return { tlsSink, plainSink, dns: dns.address };
}

async function daemonWith(t: Test, tls: 'verify' | 'require', dns: string, port: number) {
  const { daemon, key } = await spawnDaemonTrusting(t, ca.cert, {
    POSTERN_DNS_SERVERS: dns,
    POSTERN_DELIVERY_PORT: String(port),
    POSTERN_DELIVERY_TLS: tls,
  });
  const api = async (method: string, p: string, body?: unknown) => {
    const r = await fetch(`http://127.0.0.1:${daemon.http}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  return {
    async send(to: string): Promise<string> {
      const r = await api('POST', '/v1/send-raw', { to, channel: 'email', content: { subject: `to ${to}`, text: 'hello' } });
      t.equal(r.status, 202, JSON.stringify(r.body));
      return r.body.id as string;
    },
    /** The message once its first attempt has an outcome: delivered, or deferred (a timeline entry). */
    async settled(id: string): Promise<Message> {
      // The spawned daemon has no hook to await: read the message until the attempt is recorded.
      return until(`an outcome of the first attempt of ${id}`, async () => {
        const m = (await api('GET', `/v1/messages/${id}`)).body as Message;
        if (m.status !== 'queued' && m.status !== 'dispatched') return m;
        return m.timeline.some((e) => e.e.startsWith('deferred')) && m;
      });
    },
  };
}

const deferred = (m: Message) => m.status === 'dispatched' && m.timeline.some((e) => e.e.startsWith('deferred'));

t.test('delivery.tls=verify in direct mode', async (t) => {
  const { tlsSink, plainSink, dns } = await mxHosts(t);
  const d = await daemonWith(t, 'verify', dns, tlsSink.port);

  const ok = await d.settled(await d.send('a@good.test'));
  t.equal(ok.status, 'delivered', 'a certificate from the trusted CA for the MX name delivers');
  t.match(tlsSink.received, [{ to: ['a@good.test'], secure: true, servername: 'mx.good.test' }]);

  for (const [to, why] of [
    ['b@wrong.test', 'a trusted certificate for another name'],
    ['c@rogue.test', 'a certificate from an untrusted CA'],
  ]) {
    const m = await d.settled(await d.send(to));
    t.ok(deferred(m), `${why}: deferred (${m.status}, ${m.error})`);
    t.match(m.error, /certificate|altnames|self.signed|unable to verify/i, why);
  }
  t.equal(tlsSink.received.length, 1, 'nothing was sent over an unverified session');

  const plain = await d.settled(await d.send('d@plain.test'));
  t.equal(plain.status, 'delivered', 'no STARTTLS offered: verify sends in plain text');
  t.match(plainSink.received, [{ to: ['d@plain.test'], secure: false }]);
});

t.test('delivery.tls=require in direct mode', async (t) => {
  const { tlsSink, plainSink, dns } = await mxHosts(t);
  const d = await daemonWith(t, 'require', dns, tlsSink.port);

  const ok = await d.settled(await d.send('a@good.test'));
  t.equal(ok.status, 'delivered', 'STARTTLS with a verified certificate delivers');
  t.match(tlsSink.received, [{ to: ['a@good.test'], secure: true, servername: 'mx.good.test' }]);

  const none = await d.settled(await d.send('d@plain.test'));
  t.ok(deferred(none), `no STARTTLS offered: deferred (${none.status}, ${none.error})`);
  t.match(none.error, /STARTTLS/i);
  t.equal(plainSink.received.length, 0, 'never plain text');

  const untrusted = await d.settled(await d.send('c@rogue.test'));
  t.ok(deferred(untrusted), `an untrusted certificate: deferred (${untrusted.status}, ${untrusted.error})`);
  t.equal(tlsSink.received.length, 1);
});
