// `npm run bench send`: accepted sends per second (POST /v1/send → 202) with p50/p99 latency, on
// SQLite (WAL, each commit on disk before its 202: db/wal-sync.ts) with the dispatcher running and test-mode keys, next to a bare
// Express handler measured in the same run on the same machine. Loopback only, bounded in time.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import express from 'express';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { benchWorkspace, load, startPostern, type LoadResult } from './lib.js';

const DURATION_S = 8;
const CONNECTIONS = 32;
const BATCH = Number(process.env.BENCH_SEND_BATCH ?? 100);

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  total: number;
}

async function measure(url: string, headers: Record<string, string>, body: string): Promise<Figures> {
  const r = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    connections: CONNECTIONS,
    duration: DURATION_S,
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, total: r.requests.total };
}

async function bare(body: string): Promise<Figures> {
  const app = express();
  app.post('/send', express.json(), (_req, res) => {
    res.status(202).json({ id: 'msg_0000000000000000000000', status: 'queued', livemode: false });
  });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  await measure(`http://127.0.0.1:${port}/send`, {}, body); // warm-up, not reported
  const f = await measure(`http://127.0.0.1:${port}/send`, {}, body);
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  return f;
}

// Settings under study can be passed through: BENCH_POSTERN_* → POSTERN_* (e.g. BENCH_POSTERN_DISPATCHER_COMMIT_WINDOW).
function benchOverrides(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env)
      .filter(([k]) => k.startsWith('BENCH_POSTERN_'))
      .map(([k, v]) => [k.slice('BENCH_'.length), v ?? '']),
  );
}

async function postern(body: string, route: string): Promise<Figures & { delivered: number; accepted: number }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-bench-send-'));
  try {
    const config = loadConfig({
      env: {
        POSTERN_DATA_DIR: dataDir,
        POSTERN_HTTP_PORT: '0',
        POSTERN_SMTP_PORT: '0',
        POSTERN_METRICS_PORT: '0',
        POSTERN_SMTP_HOST: '127.0.0.1',
        POSTERN_RATE_LIMIT_SEND: '0',
        POSTERN_RATE_LIMIT_READ: '0',
        POSTERN_LOG_LEVEL: 'silent',
        ...benchOverrides(),
      },
    });
    const app = await createApp({ config });
    const ws = await app.workspaces.create({ slug: 'bench', name: 'Bench', plan: 'custom' });
    const { secret } = await app.keys.create(ws, { env: 'test' });
    const ports = await app.start();
    const url = `http://127.0.0.1:${ports.http}${route}`;
    const headers = { authorization: `Bearer ${secret}` };
    await measure(url, headers, body); // warm-up
    const f = await measure(url, headers, body);
    await app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const counts = await app.db
      .selectFrom('messages')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    await app.stop();
    const by = Object.fromEntries(counts.map((c) => [c.status, Number(c.n)]));
    return { ...f, delivered: by.delivered ?? 0, accepted: Object.values(by).reduce((a, b) => a + b, 0) };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * POST /v1/send-raw against the daemon as its own process (`postern serve` from the build, as in
 * production), autocannon in this one: the accept path alone, with the dispatcher settling the
 * test-mode messages as they come, but no SMTP delivery sharing the cores.
 */
async function ownProcess(body: string, route = '/v1/send-raw', connections = CONNECTIONS): Promise<LoadResult> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-bench-send-'));
  const env = { POSTERN_DATA_DIR: dataDir, POSTERN_LOG_LEVEL: 'error', ...benchOverrides() };
  const secret = await benchWorkspace(env, { keyEnv: 'test', plan: 'custom' });
  const daemon = await startPostern(
    env,
    process.env.BENCH_SEND_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SEND_PROFILE}`] : [],
  );
  try {
    return await load({
      url: `http://127.0.0.1:${daemon.port}${route}`,
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body,
      connections,
      seconds: DURATION_S,
    });
  } finally {
    await daemon.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const body = JSON.stringify({
    to: 'bench@example.com',
    channel: 'email',
    metadata: { run: 'bench' },
    content: { subject: 'Hello', text: 'Hello from the benchmark' },
  });
  const b = await bare(body);
  const full = await postern(body, '/v1/send');
  const raw = await postern(body, '/v1/send-raw');
  const fmt = (f: Figures) => `${Math.round(f.rps)} req/s, p50 ${f.p50} ms, p99 ${f.p99} ms, non-2xx ${f.non2xx}`;
  console.log(`bare Express handler (POST, JSON body → 202):    ${fmt(b)}`);
  console.log(`POST /v1/send, SQLite, WAL on disk before 202:    ${fmt(full)}`);
  console.log(`  ratio to bare: ${((full.rps / b.rps) * 100).toFixed(1)}% (target ≥ 25%)`);
  console.log(`  dispatcher: ${full.delivered} of ${full.accepted} accepted messages delivered by the end of the run`);
  console.log(`POST /v1/send-raw, the same:                      ${fmt(raw)}`);
  const alone = await ownProcess(body);
  console.log(`POST /v1/send-raw, daemon in its own process:     ${fmt(alone)}`);
  // The accept path alone: the same body scheduled a day ahead, so the dispatcher has nothing to do.
  const later = JSON.stringify({ ...JSON.parse(body), scheduledAt: new Date(Date.now() + 86_400_000).toISOString() });
  const acceptOnly = await ownProcess(later);
  console.log(`  the accept alone (scheduled a day ahead):        ${fmt(acceptOnly)} (target ≥ 2,000 req/s)`);

  // Batches (issue 36): BATCH messages per POST /v1/send/batch, against single POST /v1/send, both
  // to the daemon in its own process with the dispatcher settling what is accepted. Fewer
  // connections for batches: each request is BATCH messages, so 4 keep the daemon as busy.
  const single = await ownProcess(body, '/v1/send');
  const batch = JSON.stringify({
    messages: Array.from({ length: BATCH }, (_v, i) => ({ ...JSON.parse(body), to: `bench${i}@example.com` })),
  });
  const batched = await ownProcess(batch, '/v1/send/batch', 4);
  const perSecond = batched.rps * BATCH;
  console.log(`POST /v1/send, daemon in its own process:         ${fmt(single)}`);
  console.log(`POST /v1/send/batch (${BATCH} per request), the same: ${fmt(batched)}`);
  console.log(
    `  ${Math.round(perSecond)} messages/s: ${(perSecond / single.rps).toFixed(2)}× single sends, both with the dispatcher delivering`,
  );
  // The accept path alone (issue 36's measure): the same batch scheduled a day ahead, against the
  // single send scheduled the same way (`acceptOnly` above).
  const scheduledAt = (JSON.parse(later) as { scheduledAt: string }).scheduledAt;
  const laterBatch = JSON.stringify({
    messages: (JSON.parse(batch) as { messages: object[] }).messages.map((m) => ({ ...m, scheduledAt })),
  });
  const batchedOnly = await ownProcess(laterBatch, '/v1/send/batch', 4);
  const onlyPerSecond = batchedOnly.rps * BATCH;
  console.log(`POST /v1/send/batch, the accept alone:           ${fmt(batchedOnly)}`);
  console.log(
    `  ${Math.round(onlyPerSecond)} messages/s: ${(onlyPerSecond / acceptOnly.rps).toFixed(2)}× the single accept alone (target ≥ 5×)`,
  );
}
