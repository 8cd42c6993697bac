// The direct-delivery pool reuses a connection only for the name it was verified for. Two MX names
// resolve to the same loopback address, where one smtp-server presents a certificate per name (SNI),
// both issued by a test CA the daemon trusts through NODE_EXTRA_CA_CERTS (so the real binary runs,
// as an operator with a private CA would run it). With `delivery.tls=verify`, mail for each name must
// travel on a connection whose TLS session was verified for that name, while mail for the same name
// still shares one connection.
import t from 'tap';
import { startDnsServer } from '../../helpers/dns-server.js';
import { makeTestCa } from '../../helpers/self-signed.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { spawnDaemonTrusting } from '../../helpers/run-bin.js';
import { sqliteOnly } from '../../helpers/databases.js';

sqliteOnly(
  'which TLS connection the direct-delivery pool reuses (the real binary, for NODE_EXTRA_CA_CERTS); what a delivery stores runs on both in direct.test.ts',
);

t.test('a verified TLS connection is reused only for the MX name it was verified for', async (t) => {
  const ca = makeTestCa();
  const mx = ca.issue(['mx.dest.test']);
  const other = ca.issue(['mx-other.dest.test']);
  const sink = await startSink(t, { tls: mx, sni: { 'mx.dest.test': mx, 'mx-other.dest.test': other } });
  const dns = await startDnsServer({
    'dest.test': [{ type: 'MX', data: { preference: 10, exchange: 'mx.dest.test' } }],
    'other.test': [{ type: 'MX', data: { preference: 10, exchange: 'mx-other.dest.test' } }],
    'mx.dest.test': [{ type: 'A', data: '127.0.0.1' }],
    'mx-other.dest.test': [{ type: 'A', data: '127.0.0.1' }],
  });
  t.teardown(() => dns.close());
  const { daemon, key } = await spawnDaemonTrusting(t, ca.cert, {
    POSTERN_DNS_SERVERS: dns.address,
    POSTERN_DELIVERY_PORT: String(sink.port),
    POSTERN_DELIVERY_TLS: 'verify',
    POSTERN_DELIVERY_IDLE_TIMEOUT: '60s',
  });
  const send = async (to: string) => {
    const r = await fetch(`http://127.0.0.1:${daemon.http}/v1/send-raw`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to, channel: 'email', content: { subject: `to ${to}`, text: 'hello' } }),
    });
    t.equal(r.status, 202);
  };

  await send('a@dest.test');
  await sink.waitFor(1);
  await send('b@other.test');
  await sink.waitFor(2);
  await send('c@dest.test');
  await sink.waitFor(3);
  const [a, b, c] = sink.received;
  t.match(a, { to: ['a@dest.test'], secure: true, servername: 'mx.dest.test' });
  t.match(b, { to: ['b@other.test'], secure: true, servername: 'mx-other.dest.test' }, 'verified for its own MX name');
  t.not(b.connection, a.connection, 'not over the connection verified for mx.dest.test');
  t.match(c, { to: ['c@dest.test'], secure: true, servername: 'mx.dest.test' });
  t.equal(c.connection, a.connection, 'mail for the same name still shares its connection');
});
