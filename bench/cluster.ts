// `npm run bench cluster`: one node on SQLite beside 1, 2 and 3 nodes on one PostgreSQL database,
// in one sitting. Each shape posts N messages to POST /v1/send-raw, spread over its nodes, and
// they deliver them through smtp-direct to a loopback SMTP sink (MX from a loopback DNS server).
// Per shape: messages/s from the first 202 to the last 250, the nodes' CPU per message (all node
// processes), PostgreSQL's CPU per message (every `postgres` process of the machine, so run it on
// an otherwise idle server), what was lost or delivered twice, and how late a live tail on the
// first node saw each change (its timeline stamp to its arrival; BENCH_CLUSTER_TAIL=1, since a
// tail renders every change and costs CPU of its own). On a 2-core machine more nodes
// cannot be faster; CPU per message, and nothing lost or doubled, are the figures that matter.
//
// CPU figures are noisy on a shared machine, so the shapes run round-robin, BENCH_CLUSTER_ROUNDS
// times (each round runs every shape once), and the summary gives each shape's median and the
// ratios issue 33 sets targets for: PostgreSQL's one node (node + server CPU) over SQLite's, and
// two nodes over one. Beside CPU, what PostgreSQL was asked per message, which does not depend on
// the machine's load: transactions (pg_stat_database) and the rows written and the scans of the
// tables (pg_stat_user_tables), read after the nodes stopped (a backend reports its counts when it
// ends). With BENCH_CLUSTER_STATEMENTS=1 the bench runs its own PostgreSQL server
// (test/helpers/private-postgres.ts) with pg_stat_statements loaded and also prints each
// statement's calls per message (the shared server cannot load it without a restart).
//
// Each node first delivers BENCH_CLUSTER_WARMUP messages (default 1000) that are not measured.
//
// Environment: BENCH_CLUSTER_N (default 3000), BENCH_CLUSTER_CONCURRENCY (HTTP clients, 32),
// BENCH_CLUSTER_ROUNDS (default 1), BENCH_CLUSTER_SHAPES (default
// "sqlite:1,postgres:1,postgres:2,postgres:3", or without postgres:3 when there are several rounds),
// BENCH_CLUSTER_DATABASE_URL (an admin URL a fresh database is created through, named as the
// tests name theirs, POSTERN_TEST_DB_PREFIX first; default postgres://postgres@127.0.0.1:5432/test),
// BENCH_CLUSTER_STATEMENTS, BENCH_CLUSTER_CPU_PROF (a
// directory: every node writes a V8 CPU profile there). Any POSTERN_* variable is passed to the nodes.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { freshPostgres } from '../test/helpers/databases.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { startPrivatePostgres } from '../test/helpers/private-postgres.js';
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

/** What PostgreSQL was asked for one shape's run, in all (divided per message when printed). */
interface Asked {
  transactions: number;
  inserted: number;
  updated: number;
  deleted: number;
  seqScans: number;
  idxScans: number;
}

interface Row {
  round: number;
  store: Shape['store'];
  nodes: number;
  messagesPerSecond: number;
  nodeCpuMsPerMessage: number;
  postgresCpuMsPerMessage: number | null;
  /** Node and PostgreSQL CPU per message. */
  totalCpuMsPerMessage: number;
  perMessage: Asked | null;
  lost: number;
  duplicates: number;
  tailLagMsP99: number | null;
}

/** The counters of `database` so far (its own connection; call once its other backends ended). */
async function asked(url: string): Promise<Asked> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const db = await c.query('SELECT xact_commit + xact_rollback AS x FROM pg_stat_database WHERE datname = current_database()');
    const t = await c.query(`SELECT coalesce(sum(n_tup_ins), 0) AS ins, coalesce(sum(n_tup_upd), 0) AS upd,
        coalesce(sum(n_tup_del), 0) AS del, coalesce(sum(seq_scan), 0) AS seq, coalesce(sum(idx_scan), 0) AS idx
      FROM pg_stat_user_tables`);
    const r = t.rows[0] as Record<string, string>;
    return {
      transactions: Number(db.rows[0].x),
      inserted: Number(r.ins),
      updated: Number(r.upd),
      deleted: Number(r.del),
      seqScans: Number(r.seq),
      idxScans: Number(r.idx),
    };
  } finally {
    await c.end();
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round2 = (x: number) => Number(x.toFixed(2));

export async function run(): Promise<void> {
  const N = Number(process.env.BENCH_CLUSTER_N ?? 3000);
  const WARMUP = Number(process.env.BENCH_CLUSTER_WARMUP ?? 1000);
  const CONC = Number(process.env.BENCH_CLUSTER_CONCURRENCY ?? 32);
  const TAIL = process.env.BENCH_CLUSTER_TAIL === '1';
  const ROUNDS = Number(process.env.BENCH_CLUSTER_ROUNDS ?? 1);
  const STATEMENTS = process.env.BENCH_CLUSTER_STATEMENTS === '1';
  const PROFILE = process.env.BENCH_CLUSTER_CPU_PROF;
  const teardowns: (() => unknown)[] = [];
  let admin = process.env.BENCH_CLUSTER_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (STATEMENTS) {
    const server = await startPrivatePostgres(
      { teardown: (fn) => teardowns.push(fn) },
      { settings: ["shared_preload_libraries = 'pg_stat_statements'", 'pg_stat_statements.track = all'] },
    );
    admin = server.url;
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await c.end();
  }
  const defaultShapes = ROUNDS > 1 ? 'sqlite:1,postgres:1,postgres:2' : 'sqlite:1,postgres:1,postgres:2,postgres:3';
  const shapes: Shape[] = (process.env.BENCH_CLUSTER_SHAPES ?? defaultShapes).split(',').map((s) => {
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
  const rows: Row[] = [];

  async function runShape(shape: Shape, round: number): Promise<Row> {
    const dirs = Array.from({ length: shape.nodes }, () => mkdtempSync(path.join(tmpdir(), 'postern-bench-node-')));
    let databaseUrl = '';
    let dbName = '';
    let dropDb = async () => {};
    if (shape.store === 'postgres') {
      const fresh = await freshPostgres({ admin });
      dbName = fresh.name;
      databaseUrl = fresh.url;
      dropDb = fresh.drop;
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
    const nodeArgs = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : [];
    for (const dir of dirs) nodes.push(await startPostern(env(dir), nodeArgs));
    // Every node knows of the others (their shares of the connection cap) by its next beat; and a
    // backend reports its counts within a second of going idle, so the start's are in before the load.
    await new Promise((r) => setTimeout(r, shape.nodes > 1 ? 5_500 : 1_500));

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

    const agent = new http.Agent({ keepAlive: true, maxSockets: CONC });
    const post = (node: ChildServer, body: string) => postSendRaw(agent, node.port, key, body);
    const body = (to: string, i: number) => JSON.stringify({ to, channel: 'email', content: { subject: `Bench ${i}`, html } });
    // Each node's warm-up, delivered before anything is measured: every process compiles its own
    // code (V8's optimizing compilers run on threads of their own, and code runs slower until
    // they have), so without it each node's share of N pays that once more per node.
    if (WARMUP > 0) {
      counts = new Map();
      target = WARMUP * nodes.length;
      const warmed = new Promise<void>((r) => (done = r));
      let w = 0;
      const warm = async () => {
        for (let i = w++; i < target; i = w++) await post(nodes[i % nodes.length], body(`warm${i}@bench.example`, i));
      };
      await Promise.all(Array.from({ length: CONC }, warm));
      await warmed;
      // The warm-up's counts, in before the first reading: a backend that went idle with counts it
      // has not reported reports them after PostgreSQL's idle interval (PGSTAT_IDLE_INTERVAL, 10 s).
      await new Promise((r) => setTimeout(r, 11_000));
    }
    counts = new Map();
    target = N;
    const allDone = new Promise<void>((r) => (done = r));
    const pids = nodes.map((n) => n.child.pid!);
    const nodeCpu = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    const asked0 = databaseUrl ? await asked(databaseUrl) : null;
    if (STATEMENTS && databaseUrl) {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query('SELECT pg_stat_statements_reset()');
      await c.end();
    }
    const cpu0 = nodeCpu();
    const pgCpu0 = shape.store === 'postgres' ? postgresCpuSeconds() : 0;
    let next = 0;
    let firstAccept = 0;
    let rejected = 0;
    const client = async () => {
      for (let i = next++; i < N; i = next++) {
        const status = await post(nodes[i % nodes.length], body(`user${i}@bench.example`, i));
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
    await Promise.all(nodes.map((n) => n.stop()));
    // Read once the nodes' backends ended (each reports its counts as it ends); includes their stop.
    let perMessage: Asked | null = null;
    if (asked0) {
      const asked1 = await asked(databaseUrl);
      // Less the two transactions of the first reading's own connection.
      const delta = (k: keyof Asked) => round2((asked1[k] - asked0[k] - (k === 'transactions' ? 2 : 0)) / N);
      perMessage = {
        transactions: delta('transactions'),
        inserted: delta('inserted'),
        updated: delta('updated'),
        deleted: delta('deleted'),
        seqScans: delta('seqScans'),
        idxScans: delta('idxScans'),
      };
    }
    if (STATEMENTS && databaseUrl) {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      const top = await c.query(
        `SELECT calls, total_exec_time AS ms, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY calls DESC LIMIT 25`,
        [dbName],
      );
      await c.end();
      console.log(`statements of ${shape.store}:${shape.nodes} (calls and server ms per message):`);
      for (const r of top.rows as { calls: string; ms: number; query: string }[]) {
        console.log(`  ${(Number(r.calls) / N).toFixed(3).padStart(7)}  ${(r.ms / N).toFixed(3).padStart(6)}  ${r.query.slice(0, 150)}`);
      }
    }
    lags.sort((a, b) => a - b);
    const pct = (q: number) => (lags.length ? lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] : null);
    const seconds = (lastAt - firstAccept) / 1000;
    const nodeMs = round2((cpu * 1000) / N);
    const pgMs = shape.store === 'postgres' ? round2((pgCpu * 1000) / N) : null;
    const row: Row = {
      round,
      store: shape.store,
      nodes: shape.nodes,
      messagesPerSecond: Math.round(counts.size / seconds),
      nodeCpuMsPerMessage: nodeMs,
      postgresCpuMsPerMessage: pgMs,
      totalCpuMsPerMessage: round2(nodeMs + (pgMs ?? 0)),
      perMessage,
      lost: N - counts.size,
      duplicates: [...counts.values()].filter((c) => c > 1).length,
      tailLagMsP99: pct(0.99),
    };
    console.log(
      JSON.stringify({
        benchmark: 'cluster',
        ...row,
        messages: N,
        rejected,
        acceptPerSecond: Math.round(N / acceptSeconds),
        tail: TAIL ? 'open on the first node' : 'none',
        tailChanges: lags.length,
        tailLagMsP50: pct(0.5),
        loadavg: readFileSync('/proc/loadavg', 'utf8').trim(),
      }),
    );
    await dropDb();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    return row;
  }

  console.log(`load average at the start: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
  for (let round = 1; round <= ROUNDS; round++) for (const shape of shapes) rows.push(await runShape(shape, round));
  console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
  await new Promise<void>((r) => sink.close(() => r()));
  await dns.close();
  for (const fn of teardowns.reverse()) await fn();

  // Each shape's median over the rounds.
  const med = shapes.map((shape) => {
    const of = rows.filter((r) => r.store === shape.store && r.nodes === shape.nodes);
    const m = (f: (r: Row) => number | null) => {
      const xs = of.map(f).filter((x): x is number => x !== null);
      return xs.length ? round2(median(xs)) : null;
    };
    return {
      ...shape,
      rounds: of.length,
      messagesPerSecond: m((r) => r.messagesPerSecond)!,
      node: m((r) => r.nodeCpuMsPerMessage)!,
      postgres: m((r) => r.postgresCpuMsPerMessage),
      total: m((r) => r.totalCpuMsPerMessage)!,
      transactions: m((r) => r.perMessage?.transactions ?? null),
      written: m((r) => (r.perMessage ? r.perMessage.inserted + r.perMessage.updated + r.perMessage.deleted : null)),
      scans: m((r) => (r.perMessage ? r.perMessage.seqScans + r.perMessage.idxScans : null)),
      seqScans: m((r) => r.perMessage?.seqScans ?? null),
      lost: of.reduce((s, r) => s + r.lost, 0),
      duplicates: of.reduce((s, r) => s + r.duplicates, 0),
      tailLagMsP99: m((r) => r.tailLagMsP99),
    };
  });
  const sqlite = med.find((r) => r.store === 'sqlite' && r.nodes === 1);
  const pg1 = med.find((r) => r.store === 'postgres' && r.nodes === 1);
  const pg2 = med.find((r) => r.store === 'postgres' && r.nodes === 2);
  console.log(`\ntail: ${TAIL ? 'open' : 'none'}; medians of ${ROUNDS} round(s), shapes alternated; CPU and counts per delivered message`);
  console.log(
    '| store | nodes | msg/s | vs SQLite | node CPU ms | PostgreSQL CPU ms | total ms | transactions | rows written | scans (seq) | lost | twice | tail lag p99 |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of med) {
    const ratio = sqlite ? (r.messagesPerSecond / sqlite.messagesPerSecond).toFixed(2) : '—';
    const dash = (x: number | null) => (x === null ? '—' : String(x));
    console.log(
      `| ${r.store} | ${r.nodes} | ${r.messagesPerSecond} | ${ratio} | ${r.node} | ${dash(r.postgres)} | ${r.total} | ${dash(r.transactions)} | ${dash(r.written)} | ${r.scans === null ? '—' : `${r.scans} (${r.seqScans})`} | ${r.lost} | ${r.duplicates} | ${r.tailLagMsP99 === null ? '—' : `${r.tailLagMsP99} ms`} |`,
    );
  }
  // Issue 33's targets: one PostgreSQL node ≤ 1.15× SQLite's CPU per message, two nodes ≤ 1.1× one.
  if (sqlite && pg1)
    console.log(`\nPostgreSQL 1 node / SQLite (node + server CPU per message): ${(pg1.total / sqlite.node).toFixed(2)} (target ≤ 1.15)`);
  if (pg1 && pg2)
    console.log(`PostgreSQL 2 nodes / 1 node (node + server CPU per message): ${(pg2.total / pg1.total).toFixed(2)} (target ≤ 1.10)`);
}
