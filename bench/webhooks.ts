// Webhook benchmark, loopback only and bounded: (1) deliveries per second from the outbox to a
// node:http receiver, with one endpoint (per-endpoint cap) and with several; (2) the delay from the
// SMTP 250 reply to the webhook's arrival for message.received, p50/p99.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import nodemailer from 'nodemailer';
import { createApp, type App } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { recordEvent } from '../src/events/record.js';
import { createLogger } from '../src/lib/logger.js';
import { startDnsServer } from '../test/helpers/dns-server.js';

interface Sink {
  url: string;
  arrivals: Map<string, number>;
  waitFor(n: number): Promise<void>;
  close(): Promise<void>;
}

async function sink(): Promise<Sink> {
  const arrivals = new Map<string, number>();
  let want = Infinity;
  let done: () => void = () => {};
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const key = body.type === 'message.received' ? body.data.subject : String(req.headers['webhook-id']);
      if (!arrivals.has(key)) arrivals.set(key, performance.now());
      res.end();
      if (arrivals.size >= want) done();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    waitFor(n) {
      want = n;
      return arrivals.size >= n ? Promise.resolve() : new Promise((r) => (done = r));
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function boot(env: Record<string, string>): Promise<{ app: App; http: number; smtp: number; cleanup(): Promise<void> }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-bench-'));
  const config = loadConfig({
    env: {
      POSTERN_DATA_DIR: dataDir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_METRICS_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      POSTERN_SHARED_INBOUND_DOMAIN: 'postern.test',
      POSTERN_RATE_LIMIT_SEND: '0',
      POSTERN_RATE_LIMIT_READ: '0',
      POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true',
      ...env,
    },
  });
  const app = await createApp({ config, log: createLogger('warn') });
  const ports = await app.start();
  return {
    app,
    ...ports,
    async cleanup() {
      await app.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function throughput(endpoints: number, events: number, env: Record<string, string> = {}): Promise<void> {
  const d = await boot(env);
  const sinks = await Promise.all(Array.from({ length: endpoints }, () => sink()));
  try {
    const ws = await d.app.workspaces.create({ slug: 'bench', name: 'Bench', plan: 'custom' });
    for (const s of sinks) await d.app.webhooks.endpoints.create({ workspaceId: ws.id, livemode: true }, { url: s.url });
    const started = performance.now();
    for (let i = 0; i < events; i += 100) {
      await d.app.db.transaction().execute(async (trx) => {
        for (let j = i; j < Math.min(events, i + 100); j++) {
          await recordEvent(trx, d.app, {
            workspaceId: ws.id,
            livemode: true,
            type: 'message.delivered',
            data: { publicId: `msg_${j}`, status: 'delivered' },
          });
        }
      });
      d.app.bus.publish('events.recorded', { type: 'message.delivered' });
    }
    await Promise.all(sinks.map((s) => s.waitFor(events)));
    const secs = (performance.now() - started) / 1000;
    const total = events * endpoints;
    console.log(
      `  ${endpoints} endpoint(s), ${events} events, cap ${d.app.config.webhooks.concurrencyPerEndpoint}/endpoint: ${total} deliveries in ${secs.toFixed(2)} s = ${Math.round(total / secs)} deliveries/s`,
    );
  } finally {
    await Promise.all(sinks.map((s) => s.close()));
    await d.cleanup();
  }
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function smtpToWebhook(messages: number): Promise<void> {
  const dns = await startDnsServer({ 'sender.example': [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }] });
  const d = await boot({ POSTERN_DNS_SERVERS: dns.address, POSTERN_DNS_TIMEOUT: '500ms' });
  const rx = await sink();
  try {
    const ws = await d.app.workspaces.create({ slug: 'bench', name: 'Bench', plan: 'custom' });
    const { secret } = await d.app.keys.create(ws, { env: 'live' });
    const api = (p: string, body: unknown) =>
      fetch(`http://127.0.0.1:${d.http}${p}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<any>);
    await api('/v1/webhooks', { url: rx.url, events: ['message.received'] });
    const address = (await api('/v1/inbound/addresses', { localPart: 'bench' })).address as string;
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: d.smtp,
      secure: false,
      pool: true,
      maxConnections: 1,
      tls: { rejectUnauthorized: false },
    } as never);
    const replied = new Map<string, number>();
    for (let i = 0; i < messages; i++) {
      const subject = `bench ${i}`;
      await transport.sendMail({ from: 'alice@sender.example', to: address, subject, text: 'hello' });
      replied.set(subject, performance.now());
    }
    await rx.waitFor(messages);
    transport.close();
    const delays = [...replied].map(([s, at]) => Math.max(0, rx.arrivals.get(s)! - at)).sort((a, b) => a - b);
    console.log(
      `  SMTP 250 → webhook arrival over ${messages} messages (one at a time): p50 ${pct(delays, 50).toFixed(1)} ms, p99 ${pct(delays, 99).toFixed(1)} ms`,
    );
  } finally {
    await rx.close();
    await d.cleanup();
    await dns.close();
  }
}

export async function run(): Promise<void> {
  await throughput(1, 1000);
  await throughput(4, 1000);
  await throughput(4, 1000, { POSTERN_WEBHOOKS_CONCURRENCY_PER_ENDPOINT: '16' });
  await smtpToWebhook(200);
}
