// Drills of the cluster's database going away (docs/cluster.md, "When the database goes away"): two
// nodes on a PostgreSQL server of the test's own, under a steady load of sends and received mail,
// while the server is stopped for 20 s (`pg_ctl stop -m fast`: every session ends with 57P01, as
// a restart does) or every Postern session is terminated (`pg_terminate_backend`, as a failover
// does), five drills in a row. No node exits; every request while the database is away is `503
// unavailable` with Retry-After or SMTP 421 4.3.0, never a 500 or a 250 for mail that was not
// stored; `/readyz` follows; after recovery every accepted message is delivered exactly once,
// every received message answered 250 is stored once, and a tail open on one node through it all
// saw every message of both nodes to its end, each message's changes in order.
import t from 'tap';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startDnsServer } from '../helpers/dns-server.js';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';
import { readBootstrapKeys } from '../helpers/run-bin.js';
import { startSink } from '../helpers/smtp-sink.js';
import { openTail } from '../helpers/tail.js';
import { spawnDaemon, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

const DRILLS = 5;
const OUTAGE_MS = 20_000; // how long each server stop lasts, under the steady load

/** One SMTP transaction, reply by reply; resolves with the codes seen until the first non-2xx/3xx or the end. */
function smtpTry(port: number, rcpt: string, subject = 'drill'): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    const steps = ['EHLO client.example.org', 'MAIL FROM:<a@client.example.org>', `RCPT TO:<${rcpt}>`, 'DATA'];
    const codes: number[] = [];
    let buf = '';
    let dataSent = false;
    let done = false;
    s.setEncoding('latin1');
    s.on('data', (d: string) => {
      buf += d;
      let i: number;
      while (!done && (i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (line[3] === '-') continue;
        const code = Number(line.slice(0, 3));
        codes.push(code);
        if (code >= 400 || (dataSent && code === 250)) {
          done = true;
          s.end('QUIT\r\n');
          return;
        }
        if (code === 354) {
          dataSent = true;
          s.write(`From: a@client.example.org\r\nSubject: ${subject}\r\n\r\nhello\r\n.\r\n`);
        } else {
          const next = steps.shift();
          if (next) s.write(next + '\r\n');
        }
      }
    });
    s.on('close', () => resolve(codes));
    s.on('error', reject);
  });
}

/**
 * What a failed "0 duplicates" needs to be understood, printed as comments: each copy's arrival
 * (time, sink connection, Message-ID: one message row delivered twice, or two rows), the message's
 * timeline as the API has it, and both nodes' warnings and errors other than the outage's own noise.
 */
async function explainDuplicates(
  t: { comment(...args: unknown[]): void },
  sink: { received: { at: number; to: string[]; connection: number; raw: Buffer }[] },
  nodes: Spawned[],
  accepted: Map<string, string>,
  get: (id: string) => Promise<Response>,
) {
  const byTo = new Map<string, string>([...accepted].map(([id, to]) => [to, id]));
  const copies = new Map<string, string[]>();
  for (const m of sink.received)
    for (const to of m.to) {
      const messageId = /^message-id:\s*(.+)$/im.exec(m.raw.toString('latin1'))?.[1]?.trim();
      copies.set(to, [...(copies.get(to) ?? []), `at ${m.at} on connection ${m.connection}, Message-ID ${messageId}`]);
    }
  for (const [to, seen] of copies) {
    if (seen.length < 2) continue;
    const id = byTo.get(to);
    t.comment(`duplicate ${to} (${id ?? 'not among the accepted'}): ${seen.join('; ')}`);
    if (id) t.comment(`  ${id}: ${(await (await get(id)).text()).slice(0, 4000)}`);
  }
  const noise = /heartbeat failed|database unavailable|not ready|worker pass failed|change feed/;
  for (const [i, node] of nodes.entries())
    for (const line of node.lines) {
      const entry = (() => {
        try {
          return JSON.parse(line) as { level?: number; time?: number; msg?: string };
        } catch {
          return null;
        }
      })();
      if (entry && (entry.level ?? 0) >= 40 && !noise.test(entry.msg ?? '')) t.comment(`  node ${i} ${entry.time}: ${line.slice(0, 600)}`);
    }
}

/** Two nodes on a PostgreSQL server of the test's own, delivering to a loopback sink. */
async function twoNodes(t: { teardown(fn: () => unknown): void }, opts: { delayMs?: number; env?: Record<string, string> } = {}) {
  const pg: PrivatePostgres = await startPrivatePostgres(t);
  const sink = await startSink(t, { delayMs: opts.delayMs });
  const dns = await startDnsServer({
    'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
    'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
  });
  t.teardown(() => dns.close());
  const dirs = [mkdtempSync(path.join(tmpdir(), 'postern-node-')), mkdtempSync(path.join(tmpdir(), 'postern-node-'))];
  const nodes: Spawned[] = [];
  t.teardown(async () => {
    for (const n of nodes) n.child.kill('SIGKILL');
    await Promise.all(nodes.map((n) => n.exited));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const env = (dir: string) => ({
    POSTERN_DATABASE_URL: pg.url,
    POSTERN_DATA_DIR: dir,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.test',
    POSTERN_DNS_SERVERS: dns.address,
    POSTERN_DELIVERY_PORT: String(sink.port),
    POSTERN_RATE_LIMIT_SEND: '0',
    POSTERN_RATE_LIMIT_READ: '0',
    POSTERN_SENDER_CAPS_ENABLED: 'false',
    POSTERN_SMTP_GREETING_DELAY: '0ms',
    POSTERN_LOG_LEVEL: 'warn',
    ...opts.env,
  });
  for (const dir of dirs) nodes.push(await spawnDaemon(env(dir)));
  return { pg, sink, nodes, key: readBootstrapKeys(dirs[0]).live };
}

t.test('two nodes hold through database outages', async (t) => {
  const { pg, sink, nodes, key } = await twoNodes(t);
  const call = (node: Spawned, method: string, route: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${node.http}${route}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  const created = await call(nodes[0], 'POST', '/v1/inbound/addresses', {});
  t.equal(created.status, 201, 'an inbound address');
  const address = ((await created.json()) as { address: string }).address;
  const ready = async (node: Spawned) => (await fetch(`http://127.0.0.1:${node.http}/readyz`)).status;

  // A tail on the first node, open through every drill: it must see every message of both nodes.
  const tail = openTail(`http://127.0.0.1:${nodes[0].http}/v1/messages?tail=1`, key);
  t.teardown(() => tail.close());
  t.ok(await tail.until(() => tail.events.some((e) => e.comment === 'tail')), 'a tail is open on the first node');

  // The steady load: each node gets a send and a received message in turn, paced, until stopped.
  const accepted = new Map<string, string>(); // public id → recipient
  const stored = new Set<string>(); // subjects of received mail answered 250
  const wrong: string[] = [];
  const refused = [0, 0]; // 503s and 421s per node
  let n = 0;
  let running = true;
  const loops = nodes.map(async (node, i) => {
    while (running) {
      const to = `user${n++}@example.net`;
      try {
        const r = await call(node, 'POST', '/v1/send-raw', { to, channel: 'email', content: { subject: to, text: 'drill' } });
        if (r.status === 202) accepted.set(((await r.json()) as { id: string }).id, to);
        else if (
          r.status === 503 &&
          r.headers.get('retry-after') &&
          ((await r.json()) as { error: { code: string } }).error.code === 'unavailable'
        )
          refused[i]++;
        else wrong.push(`send to node ${i}: ${r.status} ${await r.text()}`);
      } catch (err) {
        wrong.push(`send to node ${i}: ${String(err)}`);
      }
      const subject = `in${n++}`;
      const codes = await smtpTry(node.smtp, address, subject).catch((err: unknown) => [String(err)]);
      if (codes.at(-1) === 250 && codes.length > 4) stored.add(subject);
      else if (codes.at(-1) === 421) refused[i]++;
      else wrong.push(`smtp to node ${i}: ${codes.join(' ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  const acceptedOn = async (node: number, more: number) => {
    const before = accepted.size;
    await until(`node ${node} to accept again`, () => accepted.size >= before + more);
  };
  await acceptedOn(0, 10);

  for (let drill = 1; drill <= DRILLS; drill++) {
    const how = drill % 2 ? 'the server stops' : 'every session is terminated';
    await t.test(`drill ${drill}: ${how}`, async (t) => {
      const refusedBefore = [...refused];
      if (how === 'the server stops') {
        await pg.stop('fast');
        const stoppedAt = performance.now();
        for (const node of nodes) await until('/readyz to say not ready', async () => (await ready(node)) === 503);
        for (const node of nodes) {
          const scrape = await fetch(`http://127.0.0.1:${node.metrics}/metrics`);
          t.equal(scrape.status, 200, '/metrics still answers');
          t.match(await scrape.text(), /postern_queue_messages/, 'with the gauges as last read');
        }
        // The outage lasts OUTAGE_MS under the steady load (a length of the drill, not a bound on anything).
        await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (performance.now() - stoppedAt))));
        // At least four refusals each: waited for, not counted after a time (a loaded machine sends fewer).
        await until('requests refused on both nodes', () => refused.every((c, i) => c - refusedBefore[i] >= 4));
        t.ok(
          refused.every((c, i) => c - refusedBefore[i] >= 4),
          `requests during the outage answered 503 or 421 (${refused.map((c, i) => c - refusedBefore[i]).join(', ')})`,
        );
        await pg.start();
      } else {
        const ended = await pg.terminateBackends();
        t.ok(ended > 0, `${ended} sessions terminated`);
      }
      for (const node of nodes) await until('/readyz to say ready again', async () => (await ready(node)) === 200);
      await acceptedOn(drill % 2, 10);
      t.same(wrong, [], 'every request: accepted, or 503 with Retry-After, or SMTP 421; never a 500 or a 451');
      t.same(
        nodes.map((n) => n.child.exitCode),
        [null, null],
        'no node exited',
      );
    });
  }
  running = false;
  await Promise.all(loops);

  await until(`all ${accepted.size} accepted messages delivered`, () => {
    const seen = new Set(sink.received.flatMap((m) => m.to));
    return [...accepted.values()].every((to) => seen.has(to));
  });
  const counts = new Map<string, number>();
  for (const m of sink.received) for (const to of m.to) counts.set(to, (counts.get(to) ?? 0) + 1);
  t.same(
    [...counts].filter(([, c]) => c > 1),
    [],
    '0 duplicates',
  );
  if ([...counts.values()].some((c) => c > 1))
    await explainDuplicates(t, sink, nodes, accepted, (id) => call(nodes[0], 'GET', `/v1/messages/${id}`));
  t.same(
    [...accepted.values()].filter((to) => !counts.has(to)),
    [],
    '0 lost',
  );

  // Received mail: every message answered 250 is stored, once.
  const subjects = new Map<string, number>();
  let before = '';
  for (;;) {
    const r = await call(nodes[1], 'GET', `/v1/inbound/messages?limit=100${before ? `&before=${encodeURIComponent(before)}` : ''}`);
    const page = ((await r.json()) as { messages: { subject: string; receivedAt: string }[] }).messages;
    for (const m of page) subjects.set(m.subject, (subjects.get(m.subject) ?? 0) + 1);
    if (page.length < 100) break;
    before = page.at(-1)!.receivedAt;
  }
  t.same(
    [...stored].filter((s) => subjects.get(s) !== 1),
    [],
    `every received message answered 250 is stored once (${stored.size})`,
  );

  // The tail saw every message of both nodes reach its end, each message's changes in order.
  const last = new Map<string, { status: string; entries: number }>();
  const disorder: string[] = [];
  const follow = () => {
    for (const e of tail.events.splice(0)) {
      if (e.event !== 'message') continue;
      const m = e.data as { publicId: string; status: string; timeline: unknown[] };
      const prev = last.get(m.publicId);
      if (prev && m.timeline.length < prev.entries) disorder.push(`${m.publicId}: ${prev.status} then ${m.status}`);
      last.set(m.publicId, { status: m.status, entries: m.timeline.length });
    }
  };
  const unseen = () => [...accepted.keys()].filter((id) => last.get(id)?.status !== 'delivered');
  await until('the tail to see every accepted message delivered', () => {
    follow();
    return unseen().length === 0;
  }).catch(() => {});
  t.same(
    unseen()
      .slice(0, 5)
      .map((id) => `${id}: ${last.get(id)?.status ?? 'never seen'}`),
    [],
    `the tail saw every accepted message of both nodes delivered (${unseen().length} of ${accepted.size} not)`,
  );
  t.same(disorder, [], 'each message’s changes in order');
  const logged = nodes.flatMap((node) => node.lines.filter((l) => l.includes('unhandled error')));
  t.same(logged, [], 'nothing logged as an unhandled error');
});

t.test('an outage longer than the node timeout: no node takes another’s live work', async (t) => {
  const TIMEOUT_MS = 2000;
  // A slow receiver, so deliveries are in flight, their outcomes unwritten, when the server stops.
  const { pg, sink, nodes, key } = await twoNodes(t, {
    delayMs: 200,
    env: {
      POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: '4',
      POSTERN_CLUSTER_HEARTBEAT: '500ms',
      POSTERN_CLUSTER_NODE_TIMEOUT: `${TIMEOUT_MS}ms`,
    },
  });
  const N = 80;
  const sent = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      fetch(`http://127.0.0.1:${nodes[i % 2].http}/v1/send-raw`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `long${i}@example.net`, channel: 'email', content: { subject: `m${i}`, text: 'drill' } }),
      }).then((r) => r.status),
    ),
  );
  t.same(
    sent.filter((s) => s !== 202),
    [],
    'all accepted',
  );
  await sink.waitFor(8);
  await pg.stop('fast');
  // Every node's last beat must be older than the node timeout when the server comes back.
  const stoppedAt = performance.now();
  await until('twice the node timeout to pass', () => performance.now() - stoppedAt > 2 * TIMEOUT_MS);
  await pg.start();
  await until(`all ${N} delivered`, () => new Set(sink.received.flatMap((m) => m.to)).size >= N, 120_000);
  const counts = new Map<string, number>();
  for (const m of sink.received) for (const to of m.to) counts.set(to, (counts.get(to) ?? 0) + 1);
  t.same(
    [...counts].filter(([, c]) => c > 1),
    [],
    '0 duplicates',
  );
  t.equal(counts.size, N, '0 lost');
  t.same(
    nodes.map((n) => n.child.exitCode),
    [null, null],
    'no node exited',
  );
});
