// Source addresses and pools (docs/deliverability.md): direct delivery bound to loopback sources
// 127.0.0.2, 127.0.0.3 and ::1 with their own EHLO names, against a loopback MX on 127.0.0.1 and
// ::1 that records the address each connection came from. A destination keeps one source per
// family (hash of its domain), a pooled connection never carries another source's mail, a
// sending domain or a workspace (by slug) gets its own pool, and `delivery.addressFamily` limits a
// destination (by its domain or its MX host) to IPv4 or IPv6.
import t from 'tap';
import { hashIndex } from '../../../src/channels/email/sources.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer, type ZoneRecord } from '../../helpers/dns-server.js';
import { addVerifiedDomain, emailTransport, makeDelivery, startSink } from '../../helpers/smtp-sink.js';

const DESTINATIONS = ['d1.test', 'd2.test', 'd3.test', 'd4.test', 'd5.test', 'd6.test', 'd7.test', 'd8.test'];

for (const db of testDatabases()) {
  t.test(`source addresses and pools on ${db}`, async (t) => {
    const sink = await startSink(t);
    const sink6 = await startSink(t, { host: '::1', port: sink.port });
    const both: ZoneRecord[] = [
      { type: 'A', data: '127.0.0.1' },
      { type: 'AAAA', data: '::1' },
    ];
    const zone: Record<string, ZoneRecord[]> = { 'mx.dual.test': both, 'mx.sixonly.test': both };
    for (const d of [...DESTINATIONS, 'v4only.test']) zone[d] = [{ type: 'MX', data: { preference: 10, exchange: 'mx.dual.test' } }];
    zone['gmailish.test'] = [{ type: 'MX', data: { preference: 10, exchange: 'mx.sixonly.test' } }];
    const dns = await startDnsServer(zone);
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_DELIVERY_PORT: String(sink.port),
        POSTERN_DELIVERY_IDLE_TIMEOUT: '2s',
        POSTERN_DELIVERY_SOURCES: JSON.stringify({
          a: { address: '127.0.0.2', ehlo: 'a.postern.test' },
          b: { address: '127.0.0.3', ehlo: 'b.postern.test' },
          six: { address: '::1', ehlo: 'six.postern.test' },
        }),
        POSTERN_DELIVERY_POOLS: JSON.stringify({ main: ['a', 'b', 'six'], solo: ['b'], v6: ['six'] }),
        POSTERN_DELIVERY_POOL_ASSIGNMENT: JSON.stringify({
          default: 'main',
          workspaces: { beta: 'v6' },
          domains: { 'acme.example': 'solo' },
        }),
        POSTERN_DELIVERY_ADDRESS_FAMILY: JSON.stringify({ '*.sixonly.test': 'ipv6', 'v4only.test': 'ipv4' }),
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const beta = await d.workspace('beta', { plan: 'pro' });
    const app = d.app;
    const transport = emailTransport(t, app);
    await addVerifiedDomain(app, ws.id, 'acme.example');
    const v4 = { a: '127.0.0.2', b: '127.0.0.3' };
    const ehlo = { '127.0.0.2': 'a.postern.test', '127.0.0.3': 'b.postern.test', '::1': 'six.postern.test' } as Record<string, string>;
    const arrivals = (to: string) => [...sink.received, ...sink6.received].filter((r) => r.to.includes(to));

    t.test('each destination leaves from its hashed IPv4 source, with that source EHLO name', async (t) => {
      const outs = await Promise.all(
        DESTINATIONS.flatMap((dom) => [1, 2].map((n) => transport.deliver(makeDelivery(app, ws.id, { recipient: `u${n}@${dom}` })))),
      );
      for (const out of outs) t.equal(out.kind, 'delivered');
      const seen = new Set<string>();
      for (const dom of DESTINATIONS) {
        const expected = [v4.a, v4.b][hashIndex(dom, 2)];
        for (const n of [1, 2]) {
          const [got] = arrivals(`u${n}@${dom}`);
          t.equal(got.remoteAddress, expected, `${dom} always from ${expected}`);
          t.equal(got.ehlo, ehlo[expected], 'the source EHLO name');
          seen.add(got.remoteAddress);
        }
      }
      t.same([...seen].sort(), [v4.a, v4.b], 'both IPv4 sources of the pool are used');
      const carried = new Map<number, Set<string>>();
      for (const r of sink.received) carried.set(r.connection, (carried.get(r.connection) ?? new Set()).add(r.remoteAddress));
      for (const [conn, from] of carried) t.equal(from.size, 1, `connection ${conn} carried one source's mail only`);
      t.ok(carried.size < sink.received.length, 'connections were reused within a source');
    });

    t.test('an IPv6-only MX host pattern sends over IPv6 from the IPv6 source', async (t) => {
      const out = await transport.deliver(makeDelivery(app, ws.id, { recipient: 'x@gmailish.test' }));
      t.equal(out.kind, 'delivered');
      const [got] = arrivals('x@gmailish.test');
      t.equal(got.remoteAddress, '::1');
      t.equal(got.ehlo, 'six.postern.test');
      t.equal(sink6.received.length, 1);
    });

    t.test('a sending domain assigned to its own pool leaves from it', async (t) => {
      for (const dom of DESTINATIONS.slice(0, 4)) {
        const out = await transport.deliver(makeDelivery(app, ws.id, { recipient: `news@${dom}`, fromOverride: 'news@acme.example' }));
        t.equal(out.kind, 'delivered');
        t.equal(arrivals(`news@${dom}`)[0].remoteAddress, v4.b, `${dom} from the solo pool's only source`);
      }
    });

    t.test('a workspace assigned by slug to an IPv6 pool; an IPv4-only destination then cannot be reached', async (t) => {
      const out = await transport.deliver(makeDelivery(app, beta.id, { recipient: 'y@d1.test' }));
      t.equal(out.kind, 'delivered');
      t.equal(arrivals('y@d1.test')[0].remoteAddress, '::1', 'over IPv6, though the MX lists IPv4 first');
      const before = sink.received.length + sink6.received.length;
      const refused = await transport.deliver(makeDelivery(app, beta.id, { recipient: 'z@v4only.test' }));
      t.match(refused, { kind: 'deferred', error: /pool v6 has no IPv4 source/ });
      t.equal(sink.received.length + sink6.received.length, before, 'nothing was sent over IPv6 to an IPv4-only destination');
      const fine = await transport.deliver(makeDelivery(app, ws.id, { recipient: 'z@v4only.test' }));
      t.equal(fine.kind, 'delivered');
      t.equal(arrivals('z@v4only.test')[0].remoteAddress, [v4.a, v4.b][hashIndex('v4only.test', 2)]);
    });
  });
}
