// Scheduled sends fire within a second of their time on a cluster of three nodes (docs/cluster.md,
// "Scheduled sends"), whatever `dispatcher.interval` is. Before, they fired on whichever node's
// next dispatcher pass came round, and a pass that found nothing due waited for every delivery in
// flight before the next could start.
import t from 'tap';
import { startCluster } from '../helpers/cluster.js';
import { startRemoteMx } from '../helpers/smtp-sink.js';
import { until } from '../helpers/until.js';

const pg = process.env.POSTERN_TEST_DATABASE_URL;
const SCHEDULED = 12;

t.test('scheduled sends fire at their time on a cluster of three', { skip: !pg && 'needs POSTERN_TEST_DATABASE_URL' }, async (t) => {
  const { sink, dns } = await startRemoteMx(t);
  const c = await startCluster(t, {
    nodes: 3,
    env: {
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_DELIVERY_PORT: String(sink.port),
      POSTERN_RATE_LIMIT_SEND: '0',
      // Polling alone would fire them up to 5 s late: they must fire at their time regardless.
      POSTERN_DISPATCHER_INTERVAL: '5s',
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
  // The median, not the tail: a loaded CI machine delays one message of twelve now and then (p99
  // 1.3 s was seen beside other suites), while firing by polling put the median near a second: a
  // third of the 5 s interval on three staggered nodes. The tail is a figure for the bench and the
  // comment above, not a pass/fail line here.
  t.ok(pct(fired, 0.5) <= 250, `fired at their time: p50 ${pct(fired, 0.5)} ms late`);
});
