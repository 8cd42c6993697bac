// End-to-end email delivery: N messages posted to POST /v1/send-raw, dispatched, composed and
// delivered by smtp-direct (MX resolved through a loopback DNS server) to a loopback SMTP sink.
// Reports messages/s from the first accepted request to the last 250, and the peak RSS.
// Environment: BENCH_DELIVERY_N (default 5000), BENCH_DELIVERY_CONCURRENCY (HTTP clients, 32),
// BENCH_DELIVERY_SIZE (body bytes, 5120). SQLite in a temp dir, loopback only, bounded in time.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { createApp } from '../src/app.js';
import { main as cli } from '../src/cli.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/lib/logger.js';
import { startDnsServer } from '../test/helpers/dns-server.js';

export async function run(): Promise<void> {
  const N = Number(process.env.BENCH_DELIVERY_N ?? 5000);
  const CONC = Number(process.env.BENCH_DELIVERY_CONCURRENCY ?? 32);
  const SIZE = Number(process.env.BENCH_DELIVERY_SIZE ?? 5120);
  let delivered = 0;
  let lastAt = 0;
  let done: () => void = () => {};
  const allDone = new Promise<void>((r) => (done = r));
  const sink = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    onData(stream, _s, cb) {
      stream.on('data', () => {});
      stream.on('end', () => {
        cb();
        delivered++;
        lastAt = performance.now();
        if (delivered >= N) done();
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

  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-bench-'));
  const env: Record<string, string> = {
    POSTERN_DATA_DIR: dataDir,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.bench',
    POSTERN_RATE_LIMIT_SEND: '0',
    POSTERN_RATE_LIMIT_READ: '0',
    POSTERN_LOG_LEVEL: 'error',
    POSTERN_DNS_SERVERS: dns.address,
    POSTERN_DELIVERY_PORT: String(sinkPort),
    POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: process.env.BENCH_DELIVERY_CONNECTIONS ?? '20',
    POSTERN_DISPATCHER_CONCURRENCY: process.env.BENCH_DELIVERY_DISPATCH ?? '64',
    POSTERN_DISPATCHER_BATCH_SIZE: '200',
    POSTERN_DISPATCHER_INTERVAL_MS: '50',
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('POSTERN_'))) as Record<string, string>,
  };
  const quiet = { out: () => {}, err: () => {} };
  let out = '';
  await cli(['workspace', 'create', '--slug', 'bench', '--name', 'Bench', '--plan', 'custom'], env, quiet);
  await cli(['key', 'create', '--workspace', 'bench', '--env', 'live'], env, { out: (s) => (out += s), err: () => {} });
  const key = JSON.parse(out).secret as string;

  const config = loadConfig({ env });
  const app = await createApp({ config, log: createLogger('error') });
  const ports = await app.start();
  const url = `http://127.0.0.1:${ports.http}/v1/send-raw`;
  const html = `<p>${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(Math.ceil(SIZE / 58)).slice(0, SIZE)}</p>`;

  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  let next = 0;
  let firstAccept = 0;
  let rejected = 0;
  const started = performance.now();
  const client = async () => {
    for (;;) {
      const i = next++;
      if (i >= N) return;
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `user${i}@bench.example`, channel: 'email', content: { subject: `Bench ${i}`, html } }),
      });
      await res.arrayBuffer();
      if (res.status !== 202) rejected++;
      else if (!firstAccept) firstAccept = performance.now();
    }
  };
  await Promise.all(Array.from({ length: CONC }, client));
  const acceptedAt = performance.now();
  const timeout = setTimeout(() => done(), 300_000);
  await allDone;
  clearTimeout(timeout);
  clearInterval(sampler);

  const seconds = (lastAt - firstAccept) / 1000;
  console.log(JSON.stringify({
    benchmark: 'delivery',
    messages: N,
    delivered,
    rejected,
    bodyBytes: SIZE,
    httpClients: CONC,
    acceptPerSecond: Math.round(N / ((acceptedAt - started) / 1000)),
    messagesPerSecond: Math.round(delivered / seconds),
    seconds: Number(seconds.toFixed(2)),
    peakRssMiB: Math.round(peakRss / 1048576),
  }));
  await app.stop();
  await new Promise<void>((r) => sink.close(() => r()));
  await dns.close();
  rmSync(dataDir, { recursive: true, force: true });
}
