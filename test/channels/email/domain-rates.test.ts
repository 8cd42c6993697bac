// Per-domain rate limits (`delivery.domainRates`) through the real email transport and dispatcher:
// with example.net at 2/min, four messages sent at once reach the loopback MX two now, one at the
// domain's next free slot (30 s later, not the retry schedule's 1 min) and one 30 s after that,
// while another domain sharing the same MX host is not held back (docs/email-delivery.md).
import t from 'tap';
import { bootDaemon, plainEmail } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startRemoteMx } from '../../helpers/smtp-sink.js';

for (const db of testDatabases()) {
  t.test(`delivery.domainRates paces one destination domain on ${db}`, async (t) => {
    const { sink, env } = await startRemoteMx(t, { domains: ['example.net', 'example.org'] });
    const d = await bootDaemon(t, {
      db,
      env: {
        ...env,
        POSTERN_DELIVERY_DOMAIN_RATES: '{"Example.NET": "2/min"}',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const { dispatcher, get, send } = plainEmail(d, ws.live);
    const arrived = (domain: string) => sink.received.filter((r) => r.to.every((a) => a.endsWith(`@${domain}`))).length;
    const start = d.clock.now().getTime();
    const at = async (seconds: number) => {
      d.clock.set(start + seconds * 1000);
      await dispatcher.tick();
    };

    const limited = [];
    for (const name of ['a', 'b', 'c', 'd']) limited.push(await send(`${name}@example.net`));
    const free = [await send('x@example.org'), await send('y@example.org'), await send('z@example.org')];
    await at(0);
    t.equal(arrived('example.net'), 2, 'two example.net messages at once: the bucket holds 2');
    t.equal(arrived('example.org'), 3, 'example.org has no limit, though it shares the MX host');
    for (const id of free) t.equal((await get(id)).status, 'delivered');
    const waiting = [];
    for (const id of limited) {
      const m = await get(id);
      if (m.status === 'delivered') continue;
      waiting.push(id);
      t.equal(m.status, 'dispatched', 'a rate-limited message stays dispatched');
      t.equal(m.error, 'rate limit for example.net reached; next slot in 30s');
      t.ok(
        m.timeline.some((e: { e: string }) => e.e === 'deferred'),
        'deferred on the timeline',
      );
    }
    t.equal(waiting.length, 2);

    // The next slot is 30 s away: not before, and at 30 s exactly one more token.
    await at(29);
    t.equal(arrived('example.net'), 2, 'nothing before the next slot');
    await at(30);
    t.equal(arrived('example.net'), 3, 'one more at the next free slot');
    const still = [];
    for (const id of waiting) if ((await get(id)).status !== 'delivered') still.push(id);
    t.equal(still.length, 1);
    t.equal((await get(still[0])).error, 'rate limit for example.net reached; next slot in 30s');
    await at(59);
    t.equal(arrived('example.net'), 3);
    await at(60);
    t.equal(arrived('example.net'), 4);
    for (const id of limited) t.equal((await get(id)).status, 'delivered');
    t.equal(sink.received.length, 7, 'each message reached the MX exactly once');
  });
}
