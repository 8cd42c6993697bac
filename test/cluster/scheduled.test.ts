// Scheduled sends fire at their time on a cluster of three nodes (docs/cluster.md, "Scheduled
// sends"), whatever `dispatcher.interval` is: here it is the longest allowed, ten minutes, so only
// the dispatchers' wake for the next message due can deliver them within the wait's bound. How late
// they fired is printed, not held to a figure: a loaded machine may be slower doing correct work.
// Before, they fired on whichever node's next dispatcher pass came round, and a pass that found
// nothing due waited for every delivery in flight before the next could start.
import t from 'tap';
import { startCluster } from '../helpers/cluster.js';
import { startRemoteMx } from '../helpers/smtp-sink.js';
import { until } from '../helpers/until.js';

const pg = process.env.POSTERN_TEST_DATABASE_URL;
const SCHEDULED = 12;

t.test('scheduled sends fire at their time on a cluster of three', { skip: !pg && 'needs POSTERN_TEST_DATABASE_URL' }, async (t) => {
  // One recipient is greylisted once: its retry must fire at its time too.
  let greylisted = false;
  const { sink, dns } = await startRemoteMx(t, {
    rcpt: (address) => {
      if (address !== 'retry@example.net' || greylisted) return undefined;
      greylisted = true;
      return { code: 451, message: '4.7.1 Greylisted, please try again' };
    },
  });
  const c = await startCluster(t, {
    nodes: 3,
    env: {
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_DELIVERY_PORT: String(sink.port),
      POSTERN_RATE_LIMIT_SEND: '0',
      // The longest interval there is: polling alone would not fire them within the test's bound,
      // so their arrival shows the dispatchers woke for them at their time.
      POSTERN_DISPATCHER_INTERVAL: '10m',
      POSTERN_RETRY_SCHEDULE: '2s',
    },
  });
  const send = (i: number, body: Record<string, unknown>) =>
    c.post(c.nodes[i % 3], '/v1/send-raw', { channel: 'email', content: { subject: 's', text: 'x' }, ...body });

  const base = Date.now() + 2_000;
  const at = new Map<string, number>();
  const ids = new Map<string, string>();
  for (let i = 0; i < SCHEDULED; i++) {
    const when = base + i * 700;
    const to = `sched${i}@example.net`;
    at.set(to, when);
    const r = await send(i, { to, scheduledAt: new Date(when).toISOString() });
    t.equal(r.status, 202);
    ids.set(to, ((await r.json()) as { id: string }).id);
  }
  const arrived = new Map<string, number>();
  await until('every scheduled message at the receiver', () => {
    for (const m of sink.received) for (const to of m.to) if (at.has(to) && !arrived.has(to)) arrived.set(to, m.at);
    return arrived.size >= SCHEDULED;
  });
  t.equal(arrived.size, SCHEDULED, 'every scheduled message arrived');
  // Fired: the timeline's `queued` entry, when a dispatcher found it due and took it up. Arrival
  // (the final dot at the receiver) also waits for a connection to the host, whose cap the nodes
  // share; it is reported, not held to the second.
  const fired: number[] = [];
  for (const [to, id] of ids) {
    const r = await fetch(`http://127.0.0.1:${c.nodes[0].http}/v1/messages/${id}`, { headers: { authorization: `Bearer ${c.keys.live}` } });
    const m = (await r.json()) as { timeline: { t: string; e: string }[] };
    const queued = m.timeline.find((x) => x.e === 'queued');
    fired.push(queued ? Date.parse(queued.t) - at.get(to)! : Infinity);
  }
  const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
  const late = [...arrived].map(([to, when]) => when - at.get(to)!);
  t.comment(
    `fired late by p50 ${pct(fired, 0.5)} ms, p99 ${pct(fired, 0.99)} ms; arrived p50 ${pct(late, 0.5)} ms, p99 ${pct(late, 0.99)} ms`,
  );
  t.ok(Math.min(...fired) >= 0, 'none fired before its time');

  // A retry is written after the pass that claimed its message ended: the dispatcher is woken to
  // note when it falls due (before, it waited for the next interval).
  const r = await send(0, { to: 'retry@example.net' });
  t.equal(r.status, 202);
  await until('the greylisted message delivered on its retry', () => sink.received.some((m) => m.to.includes('retry@example.net')));
  t.ok(greylisted, 'its first attempt was greylisted');
});
