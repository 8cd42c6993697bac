// End-to-end email delivery: N messages posted to POST /v1/send-raw, dispatched, composed and
// delivered by smtp-direct (MX resolved through a loopback DNS server) to a loopback SMTP sink.
// Reports messages/s from the first accepted request to the last 250, and the daemon's peak RSS.
//
// The daemon runs as its own process (`bin/postern.js serve`, from the build), as in production
// and as Postfix was measured (smtp-source and smtp-sink are separate processes): the HTTP load
// generator, the DNS server and the SMTP sink live in this process, so their CPU is not charged
// to the daemon's event loop. BENCH_DELIVERY_INPROCESS=1 runs everything in one process instead
// (the method of the first published figures, kept for comparison). BENCH_DELIVERY_PROFILE=DIR
// starts the daemon with `--cpu-prof --cpu-prof-dir=DIR`.
// Environment: BENCH_DELIVERY_N (default 5000), BENCH_DELIVERY_CONCURRENCY (HTTP clients, 32),
// BENCH_DELIVERY_SIZE (body bytes, 5120), BENCH_DELIVERY_WARMUP (messages sent and delivered
// first, not reported; 1000), BENCH_DELIVERY_CONNECTIONS (SMTP connections to the
// sink, 20), BENCH_DELIVERY_DISPATCH (dispatcher concurrency; the config default when unset),
// BENCH_DELIVERY_SCRAPE_MS (scrape GET /metrics this often while the run lasts, as Prometheus
// would; off when unset or when metrics are disabled), BENCH_DELIVERY_TLS=1 (the sink offers
// STARTTLS with a certificate for mx.bench.example from a test CA the daemon trusts through
// delivery.tlsCaFile), BENCH_DELIVERY_MTA_STS=1 (implies TLS: bench.example publishes an MTA-STS
// policy in enforce mode, served over HTTPS on loopback; set POSTERN_DELIVERY_MTA_STS_ENABLED=false
// beside it for the same run without the lookups).
// BENCH_DELIVERY_FORM: `html` (default, BENCH_DELIVERY_SIZE bytes of html) or `pdf` (20 KiB of html
// and an 80 KiB PDF attached). BENCH_DELIVERY_DKIM=0 leaves out the sending domain: by default
// workspace `bench` has bench.example.org verified (its DKIM record on the loopback DNS server) and
// every message is from it, so every message is DKIM-signed. BENCH_DELIVERY_CLIENT=c feeds both
// MTAs with C clients, so the client's own cost decides nothing: h2load posts the N messages to
// Postern (one body for all), smtp-source injects them into Postfix with the size Postern's
// messages had on the wire (the sink's average), and both rates run from the feed's start.
// Any POSTERN_* variable is passed to the daemon. Besides the rate it prints the daemon's CPU per
// message and the rate once accepting is over, which vary less on a shared machine. SQLite in a temp dir, loopback only, bounded in time.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/lib/logger.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { policy, startMtaStsServer } from '../test/helpers/mta-sts-server.js';
import { makeTestCa } from '../test/helpers/self-signed.js';
import { benchSigningDomain, benchWorkspace, cpuSeconds, peakRss, postSendRaw, startPostern, threadCpu } from './lib.js';
import { startPostfix, type Postfix } from './postfix.js';
import { Client, message } from './smtp-client.js';

interface Daemon {
  httpPort: number;
  metricsPort: number | null;
  /** Peak RSS in bytes since start (VmHWM), or the sampled peak in process. */
  peakRss(): number;
  /** CPU seconds (user + system) the daemon used so far; NaN when unknown. */
  cpuSeconds(): number;
  /** CPU seconds of the daemon's main thread (its event loop) alone; NaN when unknown. */
  loopCpuSeconds(): number;
  /** CPU seconds per thread name; empty when unknown. */
  threadCpu(): Record<string, number>;
  stop(): Promise<void>;
}

async function spawnDaemon(env: Record<string, string>): Promise<Daemon> {
  const prof = process.env.BENCH_DELIVERY_PROFILE;
  const d = await startPostern(env, prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []);
  const pid = d.child.pid!;
  return {
    httpPort: d.port,
    metricsPort: d.metrics ?? null,
    peakRss: () => peakRss(pid),
    cpuSeconds: () => cpuSeconds(pid),
    loopCpuSeconds: () => cpuSeconds(pid, pid),
    threadCpu: () => threadCpu(pid),
    stop: d.stop,
  };
}

async function inProcess(env: Record<string, string>): Promise<Daemon> {
  const config = loadConfig({ env });
  const app = await createApp({ config, log: createLogger('error') });
  const ports = await app.start();
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  return {
    httpPort: ports.http,
    metricsPort: ports.metrics,
    peakRss: () => peak,
    cpuSeconds: () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    },
    loopCpuSeconds: () => NaN,
    threadCpu: () => ({}),
    async stop() {
      clearInterval(sampler);
      await app.stop();
    },
  };
}

export async function run(): Promise<void> {
  const N = Number(process.env.BENCH_DELIVERY_N ?? 5000);
  const CONC = Number(process.env.BENCH_DELIVERY_CONCURRENCY ?? 32);
  const SIZE = Number(process.env.BENCH_DELIVERY_SIZE ?? 5120);
  const FORM = process.env.BENCH_DELIVERY_FORM ?? 'html';
  const CLIENT = process.env.BENCH_DELIVERY_CLIENT ?? 'node';
  const DKIM = process.env.BENCH_DELIVERY_DKIM !== '0';
  if (FORM !== 'html' && FORM !== 'pdf') throw new Error(`BENCH_DELIVERY_FORM is html or pdf, not ${FORM}`);
  if (CLIENT !== 'node' && CLIENT !== 'c') throw new Error(`BENCH_DELIVERY_CLIENT is node or c, not ${CLIENT}`);
  const inproc = process.env.BENCH_DELIVERY_INPROCESS === '1';
  const mtaSts = process.env.BENCH_DELIVERY_MTA_STS === '1';
  const tls = mtaSts || process.env.BENCH_DELIVERY_TLS === '1';
  const ca = tls ? makeTestCa() : null;
  const teardowns: (() => unknown)[] = [];
  // The sink counts deliveries for whichever MTA runs: Postern's, then Postfix's.
  let delivered = 0;
  let deliveredBytes = 0;
  let lastAt = 0;
  let target = N;
  let done: () => void = () => {};
  let allDone = new Promise<void>((r) => (done = r));
  const expect = (n: number) => {
    delivered = 0;
    deliveredBytes = 0;
    lastAt = 0;
    target = n;
    allDone = new Promise<void>((r) => (done = r));
  };
  const sink = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(ca ? ca.issue(['mx.bench.example']) : {}),
    onData(stream, _s, cb) {
      stream.on('data', (chunk: Buffer) => (deliveredBytes += chunk.length));
      stream.on('end', () => {
        cb();
        delivered++;
        lastAt = performance.now();
        if (delivered >= target) done();
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
  const tlsEnv: Record<string, string> = {};
  if (ca) {
    const caFile = path.join(mkdtempSync(path.join(tmpdir(), 'postern-bench-ca-')), 'ca.pem');
    writeFileSync(caFile, ca.cert);
    tlsEnv.POSTERN_DELIVERY_TLS_CA_FILE = caFile;
  }
  if (ca && mtaSts) {
    const https = await startMtaStsServer({ teardown: (fn) => void teardowns.push(fn) }, ca);
    https.serve('bench.example', { policy: policy('enforce', ['mx.bench.example']) });
    dns.set('_mta-sts.bench.example', [{ type: 'TXT', data: 'v=STSv1; id=bench1;' }]);
    dns.set('mta-sts.bench.example', [{ type: 'A', data: '127.0.0.1' }]);
    tlsEnv.POSTERN_DELIVERY_MTA_STS_PORT = String(https.port);
    tlsEnv.POSTERN_DELIVERY_MTA_STS_ALLOW_LIST = '127.0.0.1';
  }

  const deliveredOrTimeout = async () => {
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([allDone, new Promise<void>((r) => (timeout = setTimeout(r, 300_000)))]);
    clearTimeout(timeout);
  };

  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-bench-'));
  const env: Record<string, string> = {
    POSTERN_DATA_DIR: dataDir,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_METRICS_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.bench',
    POSTERN_RATE_LIMIT_SEND: '0',
    POSTERN_RATE_LIMIT_READ: '0',
    POSTERN_LOG_LEVEL: 'error',
    POSTERN_DNS_SERVERS: dns.address,
    POSTERN_DELIVERY_PORT: String(sinkPort),
    // Postfix's default_destination_concurrency_limit; Postern's own default is a politer 5.
    POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: process.env.BENCH_DELIVERY_CONNECTIONS ?? '20',
    ...(process.env.BENCH_DELIVERY_DISPATCH ? { POSTERN_DISPATCHER_CONCURRENCY: process.env.BENCH_DELIVERY_DISPATCH } : {}),
    ...tlsEnv,
    ...(Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('POSTERN_'))) as Record<string, string>),
  };
  const key = await benchWorkspace(env, { keyEnv: 'live', plan: 'custom' });
  if (DKIM) await benchSigningDomain(env, dns, 'bench.example.org');

  const daemon = inproc ? await inProcess(env) : await spawnDaemon(env);
  const htmlBytes = FORM === 'pdf' ? 20 * 1024 : SIZE;
  const html = `<p>${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(Math.ceil(htmlBytes / 58)).slice(0, htmlBytes)}</p>`;
  // A PDF's bytes are compressed streams: random bytes behind its header are as incompressible.
  const pdf = FORM === 'pdf' ? Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(80 * 1024 - 9)]).toString('base64') : null;
  const sendBody = (to: string, subject: string) =>
    JSON.stringify({
      to,
      ...(DKIM ? { from: 'bench@bench.example.org' } : {}),
      channel: 'email',
      content: { subject, html },
      ...(pdf ? { attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', content: pdf }] } : {}),
    });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONC });
  const post = (body: string) => postSendRaw(agent, daemon.httpPort, key, body);

  // Warm-up, not reported: a running daemon has its hot paths compiled. V8's optimising compiler
  // works on its own threads for the first thousand messages or so, and a cold run charges that
  // one-time CPU to the figures (the first cut of this bench measured a cold daemon).
  const WARMUP = Number(process.env.BENCH_DELIVERY_WARMUP ?? 1000);
  if (WARMUP > 0) {
    expect(WARMUP);
    let w = 0;
    const warm = async () => {
      for (let i = w++; i < WARMUP; i = w++) await post(sendBody(`warm${i}@bench.example`, `Warm ${i}`));
    };
    await Promise.all(Array.from({ length: CONC }, warm));
    await deliveredOrTimeout();
    expect(N);
  }

  const scrapeMs = Number(process.env.BENCH_DELIVERY_SCRAPE_MS ?? 0);
  let scrapes = 0;
  const scraper =
    scrapeMs > 0 && daemon.metricsPort
      ? setInterval(() => {
          void fetch(`http://127.0.0.1:${daemon.metricsPort}/metrics`).then(async (r) => {
            await r.text();
            if (r.ok) scrapes++;
          });
        }, scrapeMs)
      : null;
  const cpuBefore = daemon.cpuSeconds();
  const threadsBefore = daemon.threadCpu();
  const loopCpuBefore = daemon.loopCpuSeconds();
  const benchCpuBefore = process.cpuUsage();
  let next = 0;
  let firstAccept = 0;
  let rejected = 0;
  const started = performance.now();
  const client = async () => {
    for (;;) {
      const i = next++;
      if (i >= N) return;
      const status = await post(sendBody(`user${i}@bench.example`, `Bench ${i}`));
      if (status !== 202) rejected++;
      else if (!firstAccept) firstAccept = performance.now();
    }
  };
  if (CLIENT === 'c') {
    const accepted = await h2load(daemon.httpPort, key, sendBody('user@bench.example', 'Bench'), N, CONC);
    rejected = N - accepted;
    firstAccept = started;
  } else await Promise.all(Array.from({ length: CONC }, client));
  const acceptedAt = performance.now();
  const deliveredDuringAccept = delivered;
  const cpuAtAccepted = daemon.cpuSeconds();
  const loopCpuAtAccepted = daemon.loopCpuSeconds();
  await deliveredOrTimeout();
  if (scraper) clearInterval(scraper);
  const peakRss = daemon.peakRss();
  const threadsAfter = daemon.threadCpu();
  const cpuSeconds = daemon.cpuSeconds() - cpuBefore;
  const loopCpuSeconds = daemon.loopCpuSeconds() - loopCpuBefore;
  const benchCpu = process.cpuUsage(benchCpuBefore);

  const seconds = (lastAt - firstAccept) / 1000;
  const posternRate = Math.round(delivered / seconds);
  const wireBytes = Math.round(deliveredBytes / Math.max(1, delivered));
  console.log(
    JSON.stringify({
      benchmark: 'delivery',
      daemon: inproc ? 'in-process' : 'own process',
      metrics: daemon.metricsPort ? (scraper ? `on, ${scrapes} scrapes` : 'on') : 'off',
      tls: tls ? 'STARTTLS, certificate verified' : 'none',
      mtaSts: mtaSts ? (env.POSTERN_DELIVERY_MTA_STS_ENABLED === 'false' ? 'published, lookups off' : 'enforce, looked up') : 'none',
      messages: N,
      delivered,
      rejected,
      form: FORM === 'pdf' ? '20 KiB html and an 80 KiB PDF' : `${SIZE} bytes of html`,
      dkim: DKIM ? 'signed' : 'none',
      client: CLIENT === 'c' ? 'h2load' : 'node',
      bytesOnTheWire: wireBytes,
      httpClients: CONC,
      acceptPerSecond: Math.round(N / ((acceptedAt - started) / 1000)),
      messagesPerSecond: posternRate,
      seconds: Number(seconds.toFixed(2)),
      deliveredWhileAccepting: deliveredDuringAccept,
      // After the last 202 the daemon only delivers: its rate and CPU per message there.
      deliveryOnlyPerSecond: Math.round((delivered - deliveredDuringAccept) / ((lastAt - acceptedAt) / 1000)),
      deliveryOnlyCpuMsPerMessage: Number(
        (((daemon.cpuSeconds() - cpuAtAccepted) * 1000) / Math.max(1, delivered - deliveredDuringAccept)).toFixed(2),
      ),
      deliveryOnlyLoopCpuMsPerMessage: inproc
        ? undefined
        : Number((((daemon.loopCpuSeconds() - loopCpuAtAccepted) * 1000) / Math.max(1, delivered - deliveredDuringAccept)).toFixed(2)),
      peakRssMiB: Math.round(peakRss / 1048576),
      // CPU the daemon spent per message (accept + delivery): steadier than rates on a shared machine.
      daemonCpuMsPerMessage: Number(((cpuSeconds * 1000) / N).toFixed(2)),
      // Of which the main thread's (the event loop's): the resource the end-to-end rate is bound by.
      loopCpuMsPerMessage: inproc ? undefined : Number(((loopCpuSeconds * 1000) / N).toFixed(2)),
      // The load generator and sink's own CPU (this process; 0 extra when in process).
      benchCpuMsPerMessage: inproc ? undefined : Number(((benchCpu.user + benchCpu.system) / 1000 / N).toFixed(2)),
      // Where the daemon's CPU went, per thread name, in ms per message.
      threadCpuMsPerMessage: Object.fromEntries(
        Object.entries(threadsAfter)
          .map(([name, s]) => [name, Number((((s - (threadsBefore[name] ?? 0)) * 1000) / N).toFixed(2))] as const)
          .filter(([, ms]) => ms > 0),
      ),
    }),
  );
  agent.destroy();
  await daemon.stop();
  rmSync(dataDir, { recursive: true, force: true });

  // Postfix beside it, relaying to the same sink (bench/postfix.ts): the ratio in one run.
  if (!tls && process.env.BENCH_POSTFIX !== '0') {
    const postfix = await startPostfix({ relayPort: sinkPort });
    if ('unavailable' in postfix) console.log(`postfix: not run (${postfix.unavailable})`);
    else {
      const size = CLIENT === 'c' ? wireBytes : SIZE;
      const pf = await postfixEndToEnd(postfix, N, size, CLIENT, expect, deliveredOrTimeout, () => ({ delivered, lastAt }));
      await postfix.stop();
      const ratio = posternRate / pf.messagesPerSecond;
      console.log(JSON.stringify({ benchmark: 'delivery, postfix beside', postfix: postfix.version, ...pf }));
      console.log(`postern/postfix end to end: ${ratio.toFixed(2)} (target ≥ 1.3, issue 40)`);
    }
  }
  await new Promise<void>((r) => sink.close(() => r()));
  await dns.close();
  for (const fn of teardowns) await fn();
}

/**
 * Postfix's side of the end-to-end figure: N messages of `size` bytes injected over SMTP by
 * BENCH_DELIVERY_POSTFIX_SESSIONS sessions (20, each reusing its connection, Postfix's fastest
 * injection) while its queue manager relays them to the sink; first 250 to the sink's last 250.
 */
async function postfixEndToEnd(
  postfix: Postfix,
  N: number,
  size: number,
  client: string,
  expect: (n: number) => void,
  deliveredOrTimeout: () => Promise<void>,
  progress: () => { delivered: number; lastAt: number },
) {
  const sessions = Number(process.env.BENCH_DELIVERY_POSTFIX_SESSIONS ?? 20);
  // Warm-up, not reported: Postfix starts its smtpd, cleanup, qmgr and smtp processes on demand.
  expect(sessions);
  await inject(postfix.port, sessions, sessions, size);
  await deliveredOrTimeout();
  await postfix.drained();
  expect(N);
  const started = performance.now();
  const firstAccept =
    client === 'c' ? (await smtpSource(postfix.port, N, sessions, size), started) : await inject(postfix.port, N, sessions, size);
  const acceptedAt = performance.now();
  await deliveredOrTimeout();
  const { delivered, lastAt } = progress();
  return {
    messages: N,
    delivered,
    bodyBytes: size,
    client: client === 'c' ? 'smtp-source' : 'node',
    smtpSessions: sessions,
    acceptPerSecond: Math.round(N / ((acceptedAt - started) / 1000)),
    messagesPerSecond: Math.round(delivered / ((lastAt - firstAccept) / 1000)),
    seconds: Number(((lastAt - firstAccept) / 1000).toFixed(2)),
  };
}

/** Sends `n` messages over `sessions` reused SMTP sessions; resolves with the time of the first 250. */
async function inject(port: number, n: number, sessions: number, size: number): Promise<number> {
  let next = 0;
  let first = 0;
  const worker = async () => {
    const client = await Client.open(port);
    for (let i = next++; i < n; i = next++) {
      const to = `user${i}@bench.example`;
      await client.send(to, message(size, to));
      first ||= performance.now();
    }
    client.close();
  };
  await Promise.all(Array.from({ length: sessions }, worker));
  return first;
}

/** Posts `body` `n` times with h2load over `conc` HTTP/1.1 connections; resolves with the 2xx count. */
function h2load(port: number, key: string, body: string, n: number, conc: number): Promise<number> {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-bench-h2load-'));
  const file = path.join(dir, 'body.json');
  writeFileSync(file, body);
  const args = ['--h1', '-n', String(n), '-c', String(conc), '-m', '1', '-d', file];
  args.push('-H', 'content-type: application/json', '-H', `authorization: Bearer ${key}`, `http://127.0.0.1:${port}/v1/send-raw`);
  return new Promise((resolve, reject) =>
    execFile('h2load', args, { maxBuffer: 1 << 20, timeout: 600_000 }, (err, stdout) => {
      rmSync(dir, { recursive: true, force: true });
      const ok = /status codes: (\d+) 2xx/.exec(stdout);
      if (err || !ok) reject(new Error(`h2load: ${err?.message ?? stdout}`));
      else resolve(Number(ok[1]));
    }),
  );
}

/** `n` messages of `size` bytes injected by Postfix's smtp-source over `sessions` reused connections. */
function smtpSource(port: number, n: number, sessions: number, size: number): Promise<void> {
  const args = ['-d', '-s', String(sessions), '-m', String(n), '-l', String(size), '-f', 'bench@bench.example.org'];
  args.push('-t', 'user@bench.example', `127.0.0.1:${port}`);
  return new Promise((resolve, reject) =>
    execFile(
      existsSync('/usr/sbin/smtp-source') ? '/usr/sbin/smtp-source' : 'smtp-source',
      args,
      { timeout: 600_000 },
      (err, _out, stderr) => (err ? reject(new Error(`smtp-source: ${stderr || err.message}`)) : resolve()),
    ),
  );
}
