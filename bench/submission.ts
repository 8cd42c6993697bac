// `npm run bench submission`: accepted messages per second over SMTP submission against
// POST /v1/send-raw, on the same daemon (its own process: bench/submission-daemon.ts) in the same
// run, and against Postfix's own submission (issue 35: submission ≥ 0.9 × send-raw, and ≥ Postfix's
// submission). Rows, alternated A/B/C/D twice to even out drift, each a mean of its two runs:
// - Postern submission with nodemailer's pooled transport: SESSIONS sessions reusing their
//   connections (STARTTLS and AUTH PLAIN once per connection), two messages in flight per session;
//   nodemailer waits for each reply in turn (MAIL, RCPT, DATA, body: four round trips).
// - Postern submission with the bench's own client (bench/smtp-client.ts): SESSIONS sessions, STARTTLS
//   and AUTH PLAIN once each, one message in flight per session (SMTP is sequential within one),
//   MAIL/RCPT/DATA pipelined (RFC 2920: two round trips). The gap between the two rows is the client's.
// - POST /v1/send-raw: SESSIONS keep-alive connections, two requests in flight per connection.
// - Postfix's smtpd with Cyrus SASL (bench/postfix.ts: STARTTLS, AUTH PLAIN, relaying only for the
//   authenticated, to its smtp-sink), the same pipelining client and the same raw message. Postfix
//   fsyncs each queue file before its 250; its queue drains before and after each of its runs, so
//   its deliveries do not share the cores with Postern's rows. smtp-source cannot AUTH, hence our client.
// The message: 5 KiB of the same text in each row; nodemailer and the HTTP API build their own
// MIME around it, the bench client sends message() (bench/smtp-client.ts), From and envelope on
// the daemon's verified domain bench.example.org. Any refusal counts as a failed send.
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import nodemailer from 'nodemailer';
import { cpuSeconds, postSendRaw, ROOT } from './lib.js';
import { startPostfix } from './postfix.js';
import { Client, message, type ClientOptions } from './smtp-client.js';

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 8);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const TEXT = 'The quick brown fox jumps over the lazy dog, again and again and again.\n'.repeat(70).slice(0, 5 * 1024);
const SENDER = 'sender@bench.example.org';

interface Run {
  perSecond: number;
  failed: number;
  /** The first refusal or error, to say why sends failed. */
  error: string | null;
}

/** Runs `one(worker)` with `inFlight` workers for `seconds`; returns successes per second. */
async function drive(seconds: number, inFlight: number, one: (worker: number) => Promise<boolean>): Promise<Run> {
  const until = performance.now() + seconds * 1000;
  let ok = 0;
  let failed = 0;
  let error: string | null = null;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      while (performance.now() < until) {
        const sent = await one(worker).catch((err: Error) => ((error ??= err.message), false));
        if (sent) ok++;
        else failed++;
      }
    }),
  );
  return { perSecond: ok / ((performance.now() - start) / 1000), failed, error };
}

/**
 * SESSIONS sessions of the bench client, opened (STARTTLS, AUTH) before the clock starts; each worker
 * sends on its own, pipelined. A session that failed is reopened for the next message.
 */
async function pipelining(port: number, opts: ClientOptions) {
  const clients: (Client | null)[] = await Promise.all(Array.from({ length: SESSIONS }, () => Client.open(port, opts)));
  let n = 0;
  return {
    async one(worker: number): Promise<boolean> {
      const to = `p${++n}@example.net`;
      const client = (clients[worker] ??= await Client.open(port, opts));
      try {
        await client.sendPipelined(SENDER, [to], message(5 * 1024, to));
        return true;
      } catch (err) {
        client.close();
        clients[worker] = null;
        throw err;
      }
    },
    close: () => clients.forEach((c) => c?.close()),
  };
}

/** The bench daemon in its own process; resolves at its ready line. */
async function startDaemon() {
  // BENCH_CPU_PROF=<dir>: the daemon writes a V8 CPU profile there when it stops (node --cpu-prof).
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...prof, '--import', 'tsx', path.join(ROOT, 'bench', 'submission-daemon.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = await new Promise<{ http: number; submission: number; key: string }>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const j = JSON.parse(line) as { msg?: string; http: number; submission: number; key: string };
        if (j.msg === 'ready') resolve(j);
      } catch {
        // not ours
      }
    });
    child.once('exit', (code) => reject(new Error(`the bench daemon exited with ${code}`)));
  });
  const stop = async () => {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
  };
  return { ...ready, pid: child.pid!, stop };
}

/** Postern's nodemailer pool, as a mail client or app would configure it. */
function nodemailerPool(port: number, key: string) {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: { user: 'apikey', pass: key },
    pool: true,
    maxConnections: SESSIONS,
    maxMessages: Infinity,
    // nodemailer leaves Nagle on, so a message's last bytes wait for the server's delayed ACK
    // (about 40 ms each); Node's HTTP agent turns it off. The same for both, as a tuned client would.
    getSocket: (_opts: unknown, cb: (err: Error | null, s?: { connection: net.Socket }) => void) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.setNoDelay(true);
      socket.once('connect', () => cb(null, { connection: socket })).once('error', (err) => cb(err));
    },
  } as Parameters<typeof nodemailer.createTransport>[0]);
  let n = 0;
  return {
    async one(): Promise<boolean> {
      const info = await transport.sendMail({
        from: 'app@bench.example.org',
        to: `r${++n}@example.net`,
        subject: 'bench message',
        text: TEXT,
      });
      return /^250 /.test(info.response);
    },
    close: () => transport.close(),
  };
}

function sendRaw(port: number, key: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: SESSIONS });
  let n = 0;
  const body = (i: number) =>
    JSON.stringify({
      channel: 'email',
      to: `h${i}@example.net`,
      from: 'app@bench.example.org',
      content: { subject: 'bench message', text: TEXT },
    });
  return {
    one: async () => (await postSendRaw(agent, port, key, body(++n))) === 202,
    close: () => agent.destroy(),
  };
}

interface Row {
  label: string;
  inFlight: number;
  one: (worker: number) => Promise<boolean>;
  /** Runs before and after each measured run (Postfix's queue drains). */
  settle?: () => Promise<unknown>;
  /** The server's CPU seconds so far: Postern's daemon, or Postfix's processes. */
  serverCpu: () => number;
  perSecond: number[];
  failed: number;
  error: string | null;
  cpu: { server: number; client: number; n: number };
}

export async function run(): Promise<void> {
  // Postfix first: when the daemon does not start, the finally still stops it.
  const postfix = await startPostfix({ sasl: true });
  if ('unavailable' in postfix) console.log(`postfix: not run (${postfix.unavailable})`);
  const pf = 'unavailable' in postfix ? null : postfix;
  let daemon: Awaited<ReturnType<typeof startDaemon>> | null = null;
  const closers: (() => void)[] = [];
  try {
    daemon = await startDaemon();
    const tls = (auth: { user: string; pass: string }): ClientOptions => ({ starttls: true, auth });
    const pool = nodemailerPool(daemon.submission, daemon.key);
    const ours = await pipelining(daemon.submission, tls({ user: 'apikey', pass: daemon.key }));
    const api = sendRaw(daemon.http, daemon.key);
    const theirs = pf ? await pipelining(pf.port, tls(pf.auth!)) : null;
    closers.push(pool.close, ours.close, api.close, () => theirs?.close());
    const postern = () => cpuSeconds(daemon!.pid);
    const row = (label: string, inFlight: number, one: Row['one'], serverCpu: Row['serverCpu'], settle?: Row['settle']): Row => ({
      label,
      inFlight,
      one,
      serverCpu,
      settle,
      perSecond: [],
      failed: 0,
      error: null,
      cpu: { server: 0, client: 0, n: 0 },
    });
    const rows = [
      row(`Postern submission, nodemailer pool (${SESSIONS} sessions, 2 in flight each)`, SESSIONS * 2, pool.one, postern),
      row(`Postern submission, pipelining client (${SESSIONS} sessions)`, SESSIONS, ours.one, postern),
      row(`POST /v1/send-raw (${SESSIONS} keep-alive connections, 2 in flight each)`, SESSIONS * 2, api.one, postern),
      ...(pf && theirs
        ? [
            row(
              `Postfix ${pf.version} submission, pipelining client (${SESSIONS} sessions)`,
              SESSIONS,
              theirs.one,
              () => pf.cpuSeconds(),
              () => pf.drained(),
            ),
          ]
        : []),
    ];
    const own = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    };
    // Warm-up of each, not reported; then each measured twice, alternating, to even out drift.
    for (const r of rows) {
      await drive(2, r.inFlight, r.one);
      await r.settle?.();
    }
    for (let round = 0; round < 2; round++) {
      for (const r of rows) {
        await r.settle?.();
        const c0 = r.serverCpu();
        const o0 = own();
        const m = await drive(SECONDS / 2, r.inFlight, r.one);
        r.cpu.server += r.serverCpu() - c0;
        r.cpu.client += own() - o0;
        r.cpu.n += (m.perSecond * SECONDS) / 2;
        r.perSecond.push(m.perSecond);
        r.failed += m.failed;
        r.error ??= m.error;
        await r.settle?.();
      }
    }
    report(rows);
  } finally {
    closers.forEach((close) => close());
    await Promise.all([daemon?.stop(), pf?.stop()]);
  }
}

function report(rows: Row[]) {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const ms = (sec: number, n: number) => `${((sec * 1000) / n).toFixed(2)} ms`.padStart(9);
  console.log(
    `${SECONDS / 2} s per run, two runs each; 5 KiB text message; CPU per accepted message, during the runs: ` +
      `server = Postern's daemon or all of Postfix's processes (its relaying to the sink overlaps the run), client = this process`,
  );
  console.log(`${'row'.padEnd(78)}  msg/s  failed  server CPU  client CPU`);
  for (const r of rows)
    console.log(
      `${r.label.padEnd(78)} ${mean(r.perSecond).toFixed(0).padStart(6)} ${String(r.failed).padStart(7)}  ` +
        `${ms(r.cpu.server, r.cpu.n)}   ${ms(r.cpu.client, r.cpu.n)}`,
    );
  for (const r of rows.filter((r) => r.error)) console.log(`first failure of ${r.label}: ${r.error}`);
  const [pool, ours, api, postfix] = rows.map((r) => mean(r.perSecond));
  const ratio = (a: number, b: number) => (a / b).toFixed(2).padStart(6);
  console.log(`Postern submission (pipelining) / send-raw           ${ratio(ours, api)}   (goal ≥ 0.90)`);
  console.log(`Postern submission (nodemailer) / send-raw           ${ratio(pool, api)}`);
  if (postfix !== undefined) {
    console.log(`Postern submission / Postfix submission (same client) ${ratio(ours, postfix)}   (goal ≥ 1.00)`);
  }
}
