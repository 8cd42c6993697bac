// The per-address admission rule, table-driven: counting, the token bucket, exceptions, IPv6 /64.
import t from 'tap';
import { clientKey, createClientLimits } from '../../src/smtp/client-limits.js';

t.test('the key an address counts against', async (t) => {
  for (const [ip, key] of [
    ['192.0.2.7', '192.0.2.7'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:0000:0000:0000:0001', '2001:db8:1:2::/64'],
    ['::1', '0:0:0:0::/64'],
    ['2001:db8::', '2001:db8:0:0::/64'],
    ['::ffff:192.0.2.7', '0:0:0:0::/64'],
  ]) {
    t.equal(clientKey(ip), key, ip);
  }
});

t.test('admission', async (t) => {
  let now = 0;
  const limits = createClientLimits({
    maxConnections: 2,
    rate: { count: 3, perMs: 60_000 },
    exceptions: ['10.0.0.0/8', '2001:db8:ffff::/48', '192.0.2.99'],
    now: () => now,
  });
  const a1 = limits.admit('192.0.2.1');
  const a2 = limits.admit('192.0.2.1');
  t.match([a1, a2], [{ ok: true }, { ok: true }]);
  t.match(limits.admit('192.0.2.1'), { ok: false, reason: 'too-many-connections', key: '192.0.2.1' }, 'two at once');
  t.match(limits.admit('192.0.2.2'), { ok: true }, 'another address');
  if (a1.ok) {
    a1.release();
    a1.release();
  }
  const a3 = limits.admit('192.0.2.1');
  t.match(a3, { ok: true }, 'released (once) frees a slot');
  if (a3.ok) a3.release();
  if (a2.ok) a2.release();
  t.match(limits.admit('192.0.2.1'), { ok: false, reason: 'connection-rate' }, 'three new connections a minute');
  now += 19_999;
  t.match(limits.admit('192.0.2.1'), { ok: false, reason: 'connection-rate' });
  now += 1;
  t.match(limits.admit('192.0.2.1'), { ok: true }, 'a token every 20 s');
  t.match(limits.admit('2001:db8:1:2::1'), { ok: true });
  t.match(limits.admit('2001:db8:1:2::2'), { ok: true });
  t.match(limits.admit('2001:db8:1:2::3'), { ok: false, key: '2001:db8:1:2::/64' }, 'IPv6 counted per /64');
  for (let i = 0; i < 10; i++) {
    t.match(limits.admit('10.1.2.3'), { ok: true });
    t.match(limits.admit('2001:db8:ffff:1::1'), { ok: true });
    t.match(limits.admit('192.0.2.99'), { ok: true });
  }
});

t.test('0 means unlimited', async (t) => {
  const limits = createClientLimits({ maxConnections: 0, rate: { count: 0, perMs: 60_000 }, exceptions: [], now: () => 0 });
  for (let i = 0; i < 1000; i++) t.ok(limits.admit('192.0.2.1').ok);
  const countOnly = createClientLimits({ maxConnections: 1, rate: null, exceptions: [], now: () => 0 });
  t.ok(countOnly.admit('192.0.2.1').ok);
  t.notOk(countOnly.admit('192.0.2.1').ok);
});
