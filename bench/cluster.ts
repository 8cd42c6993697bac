// `npm run bench cluster`: one node on SQLite beside 1, 2 and 3 nodes on one PostgreSQL database,
// in one sitting. Each shape posts N messages to POST /v1/send-raw, spread over its nodes, and
// they deliver them through smtp-direct to a loopback SMTP sink (MX from a loopback DNS server).
// Per shape: messages/s from the first 202 to the last 250, the nodes' CPU per message (all node
// processes), PostgreSQL's CPU per message (every `postgres` process of the machine, so run it on
// an otherwise idle server), what was lost or delivered twice, and how late a live tail on the
// first node saw each change (its timeline stamp to its arrival; BENCH_CLUSTER_TAIL=1, since a
// tail renders every change and costs CPU of its own). On a 2-core machine more nodes
// cannot be faster; CPU per message, and nothing lost or doubled, are the figures that matter.
// Environment: BENCH_CLUSTER_N (default 3000), BENCH_CLUSTER_CONCURRENCY (HTTP clients, 32),
// BENCH_CLUSTER_SHAPES (default "sqlite:1,postgres:1,postgres:2,postgres:3"),
// BENCH_CLUSTER_DATABASE_URL (an admin URL a fresh database is created through; default
// postgres://postgres@127.0.0.1:5432/test). Any POSTERN_* variable is passed to the nodes.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { benchWorkspace, cpuSeconds, postSendRaw, startPostern, type ChildServer } from './lib.js';

/** CPU seconds of every PostgreSQL server process (postmaster and backends) so far. */
function postgresCpuSeconds(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      const s = cpuSeconds(Number(pid));
      if (!Number.isNaN(s)) total += s;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

interface Shape {
  store: 'sqlite' | 'postgres';
  nodes: number;
}

export async function run(): Promise<void> {
  const N = Number(process.env.BENCH_CLUSTER_N ?? 3000);
  const CONC = Number(process.env.BENCH_CLUSTER_CONCURRENCY ?? 32);
  const TAIL = process.env.BENCH_CLUSTER_TAIL === '1';
  const admin = process.env.BENCH_CLUSTER_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const shapes: Shape[] = (process.env.BENCH_CLUSTER_SHAPES ?? 'sqlite:1,postgres:1,postgres:2,postgres:3').split(',').map((s) => {
    const [store, nodes] = s.split(':');
    return { store: store as Shape['store'], nodes: Number(nodes) };
  });

  // One sink for every shape; each shape counts its own recipients.
  let counts = new Map<string, number>();
  let lastAt = 0;
  let target = Infinity;
  let done: () => void = () => {};
  const sink = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    onData(stream, session, cb) {
      stream.on('data', () => {});
      stream.on('end', () => {
        // Counted before the answer: the session's envelope is reset once the message is taken.
        for (const r of session.envelope.rcptTo) counts.set(r.address, (counts.get(r.address) ?? 0) + 1);
        cb();
        lastAt = performance.now();
        if (counts.size >= target) done();
      });
    },
  });
  sink.on('error', () => {});
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  const sinkPort = (sink.server.address() as AddressInfo).port;
  const dns = await startDnsServer({
    'bench.example': [{ type: 'MX', data: { preference: 10, exchange: 'mx.bench.example' } }],
    'mx.bench.example': [{ type: 'A', data: '127.0.0.1' }],
  });
  const html = `<p>${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(90).slice(0, 5120)}</p>`;
  const rows: {
    store: string;
    nodes: number;
    messagesPerSecond: number;
    nodeCpuMsPerMessage: number;
    postgresCpuMsPerMessage: number | null;
    lost: number;
    duplicates: number;
    tailLagMsP99: number | null;
  }[] = [];

  for (const shape of shapes) {
    const dirs = Array.from({ length: shape.nodes }, () => mkdtempSync(path.join(tmpdir(), 'postern-bench-node-')));
    let databaseUrl = '';
    let dropDb = async () => {};
    if (shape.store === 'postgres') {
      const name = `postern_bench_${randomBytes(4).toString('hex')}`;
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`CREATE DATABASE ${name}`);
      await c.end();
      const u = new URL(admin);
      u.pathname = `/${name}`;
      databaseUrl = u.toString();
      dropDb = async () => {
        const d = new pg.Client({ connectionString: admin });
        await d.connect();
        await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await d.end();
      };
    }
    const env = (dir: string): Record<string, string> => ({
      POSTERN_DATA_DIR: dir,
      POSTERN_DATABASE_URL: databaseUrl,
      POSTERN_HOSTNAME: 'mx.postern.bench',
      POSTERN_LOG_LEVEL: 'error',
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_DELIVERY_PORT: String(sinkPort),
      // Postfix's default_destination_concurrency_limit, for the whole cluster (split between nodes).
      POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: '20',
      POSTERN_SENDER_CAPS_ENABLED: 'false',
      ...(Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('POSTERN_'))) as Record<string, string>),
    });
    const key = await benchWorkspace(env(dirs[0]), { keyEnv: 'live', plan: 'custom' });
    const nodes: ChildServer[] = [];
    for (const dir of dirs) nodes.push(await startPostern(env(dir)));
    // Every node knows of the others (their shares of the connection cap) by its next beat.
    if (shape.nodes > 1) await new Promise((r) => setTimeout(r, 5_500));

    // A live tail on the first node: how late each change reaches it.
    const lags: number[] = [];
    const tailReq = !TAIL
      ? null
      : http.get(
          { host: '127.0.0.1', port: nodes[0].port, path: '/v1/messages?tail=1', headers: { authorization: `Bearer ${key}` } },
          (res) => {
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              buf += chunk;
              const now = Date.now();
              let i;
              while ((i = buf.indexOf('\n\n')) >= 0) {
                const block = buf.slice(0, i);
                buf = buf.slice(i + 2);
                const data = block.split('\n').find((l) => l.startsWith('data: '));
                if (!data) continue;
                const timeline = (JSON.parse(data.slice(6)) as { timeline: { t: string }[] }).timeline;
                lags.push(now - Date.parse(timeline[timeline.length - 1].t));
              }
            });
            res.on('error', () => {});
          },
        );
    tailReq?.on('error', () => {});

    counts = new Map();
    target = N;
    const allDone = new Promise<void>((r) => (done = r));
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONC });
    const post = (node: ChildServer, body: string) => postSendRaw(agent, node.port, key, body);
    const pids = nodes.map((n) => n.child.pid!);
    const nodeCpu = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    const cpu0 = nodeCpu();
    const pgCpu0 = shape.store === 'postgres' ? postgresCpuSeconds() : 0;
    let next = 0;
    let firstAccept = 0;
    let rejected = 0;
    const client = async () => {
      for (let i = next++; i < N; i = next++) {
        const status = await post(
          nodes[i % nodes.length],
          JSON.stringify({ to: `user${i}@bench.example`, channel: 'email', content: { subject: `Bench ${i}`, html } }),
        );
        if (status !== 202) rejected++;
        else if (!firstAccept) firstAccept = performance.now();
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: CONC }, client));
    const acceptSeconds = (performance.now() - started) / 1000;
    const timeout = setTimeout(() => done(), 300_000);
    await allDone;
    clearTimeout(timeout);
    // Late duplicates, and the tail's last changes.
    await new Promise((r) => setTimeout(r, 1_000));
    const cpu = nodeCpu() - cpu0;
    const pgCpu = shape.store === 'postgres' ? postgresCpuSeconds() - pgCpu0 : 0;
    tailReq?.destroy();
    agent.destroy();
    lags.sort((a, b) => a - b);
    const pct = (q: number) => (lags.length ? lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] : null);
    const seconds = (lastAt - firstAccept) / 1000;
    const row = {
      benchmark: 'cluster',
      store: shape.store,
      nodes: shape.nodes,
      messages: N,
      rejected,
      lost: N - counts.size,
      duplicates: [...counts.values()].filter((c) => c > 1).length,
      acceptPerSecond: Math.round(N / acceptSeconds),
      messagesPerSecond: Math.round(counts.size / seconds),
      nodeCpuMsPerMessage: Number(((cpu * 1000) / N).toFixed(2)),
      postgresCpuMsPerMessage: shape.store === 'postgres' ? Number(((pgCpu * 1000) / N).toFixed(2)) : null,
      tail: TAIL ? 'open on the first node' : 'none',
      tailChanges: lags.length,
      tailLagMsP50: pct(0.5),
      tailLagMsP99: pct(0.99),
    };
    rows.push(row);
    console.log(JSON.stringify(row));
    await Promise.all(nodes.map((n) => n.stop()));
    await dropDb();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
  await new Promise<void>((r) => sink.close(() => r()));
  await dns.close();

  const sqlite = rows.find((r) => r.store === 'sqlite' && r.nodes === 1);
  console.log(`\ntail: ${TAIL ? 'open' : 'none'}`);
  console.log('| store | nodes | msg/s | vs SQLite | node CPU ms/msg | PostgreSQL CPU ms/msg | lost | twice | tail lag p99 |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const ratio = sqlite ? (r.messagesPerSecond / sqlite.messagesPerSecond).toFixed(2) : '—';
    console.log(
      `| ${r.store} | ${r.nodes} | ${r.messagesPerSecond} | ${ratio} | ${r.nodeCpuMsPerMessage} | ${r.postgresCpuMsPerMessage ?? '—'} | ${r.lost} | ${r.duplicates} | ${r.tailLagMsP99 === null ? '—' : `${r.tailLagMsP99} ms`} |`,
    );
  }
}
