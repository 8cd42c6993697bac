// The doctor's check of each source address (delivery.sources) against the loopback DNS server:
// the PTR of the address must name the source's EHLO name, and that name must resolve back to the
// address (A for IPv4, AAAA for IPv6). Right, missing, wrong and not-confirmed records each give
// their status and the record that fixes it; `postern doctor` prints them.
import t from 'tap';
import type { Check } from '../../src/domains/doctor.js';
import { reverseName } from '../../src/domains/doctor.js';
import { testDatabases } from '../helpers/databases.js';
import { setup } from '../helpers/inbound.js';

const byName = (checks: Check[]) => Object.fromEntries(checks.map((c) => [c.name, c]));

for (const db of testDatabases()) {
  t.test(`source addresses in the doctor on ${db}`, async (t) => {
    const e = await setup(t, {
      db,
      env: {
        POSTERN_DELIVERY_SOURCES: JSON.stringify({
          a: { address: '127.0.0.2', ehlo: 'a.postern.test' },
          b: { address: '127.0.0.3', ehlo: 'b.postern.test' },
          six: { address: '::1', ehlo: 'six.postern.test' },
        }),
        POSTERN_DELIVERY_POOLS: JSON.stringify({ main: ['a', 'b', 'six'] }),
      },
    });
    const { dns } = e;
    const run = async () => byName((await e.d.app.doctor.run()).host);

    dns.set(reverseName('127.0.0.2'), [{ type: 'PTR', data: 'a.postern.test' }]);
    dns.set('a.postern.test', [{ type: 'A', data: '127.0.0.2' }]);
    dns.set(reverseName('127.0.0.3'), [{ type: 'PTR', data: 'other.postern.test' }]);
    dns.set(reverseName('::1'), [{ type: 'PTR', data: 'six.postern.test' }]);
    dns.set('six.postern.test', [{ type: 'AAAA', data: '::2' }]);
    let host = await run();
    t.match(host['source:a'], { status: 'pass', detail: '127.0.0.2 → a.postern.test → 127.0.0.2' });
    t.match(host['source:b'], {
      status: 'fail',
      detail: 'the PTR of 127.0.0.3 names other.postern.test, not b.postern.test',
      fix: { type: 'PTR', name: reverseName('127.0.0.3'), value: 'b.postern.test' },
    });
    t.match(host['source:six'], {
      status: 'fail',
      detail: /six\.postern\.test resolves to ::2, not back to ::1/,
      fix: { type: 'AAAA', name: 'six.postern.test', value: '::1' },
    });

    dns.set(reverseName('127.0.0.3'), []);
    dns.set(reverseName('::1'), [{ type: 'PTR', data: 'six.postern.test' }]);
    dns.set('six.postern.test', [{ type: 'AAAA', data: '::1' }]);
    host = await run();
    t.match(host['source:b'], { status: 'fail', detail: '127.0.0.3 has no PTR record (set it at your IP provider)' });
    t.match(host['source:six'], { status: 'pass', detail: '::1 → six.postern.test → ::1' });

    const cli = await e.d.cli('doctor');
    t.match(cli.stdout, /FAIL {2}source:b +127\.0\.0\.3 has no PTR record/);
    t.match(cli.stdout, /PASS {2}source:a /);
    t.equal(cli.code, 1, 'a failed source check fails the doctor');
  });
}
