// `npm run bench submission`: accepted messages per second over SMTP submission against
// POST /v1/send-raw, on the same daemon (its own process: bench/submission-daemon.ts) in the same
// run, with the same 5 KiB text message and a test-mode key. SMTP: nodemailer's pooled transport,
// SESSIONS sessions reusing their connections (STARTTLS and AUTH PLAIN once per connection), two
// messages in flight per session. HTTP: SESSIONS keep-alive connections, two requests in flight
// per connection. The goal (issue 35) is submission ≥ 0.9 × send-raw. Postfix's own submission
// (smtpd with SASL) is not measured here yet: a private Postfix with a SASL server is still to do.
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import nodemailer from 'nodemailer';
import { cpuSeconds, postSendRaw, ROOT } from './lib.js';

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 8);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const TEXT = 'The quick brown fox jumps over the lazy dog, again and again and again.\n'.repeat(70).slice(0, 5 * 1024);

/** Runs `one` with `inFlight` callers for `seconds`; returns successes per second. */
async function drive(seconds: number, inFlight: number, one: () => Promise<boolean>): Promise<{ perSecond: number; failed: number }> {
  const until = performance.now() + seconds * 1000;
  let ok = 0;
  let failed = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < until) {
        if (await one().catch(() => false)) ok++;
        else failed++;
      }
    }),
  );
  return { perSecond: ok / ((performance.now() - start) / 1000), failed };
}

export async function run(): Promise<void> {
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
  try {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: ready.submission,
      secure: false,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
      auth: { user: 'apikey', pass: ready.key },
      pool: true,
      maxConnections: SESSIONS,
      maxMessages: Infinity,
      // nodemailer leaves Nagle on, so a message's last bytes wait for the server's delayed ACK
      // (about 40 ms each); Node's HTTP agent turns it off. The same for both, as a tuned client would.
      getSocket: (_opts: unknown, cb: (err: Error | null, s?: { connection: net.Socket }) => void) => {
        const socket = net.connect(ready.submission, '127.0.0.1');
        socket.setNoDelay(true);
        socket.once('connect', () => cb(null, { connection: socket })).once('error', (err) => cb(err));
      },
    } as Parameters<typeof nodemailer.createTransport>[0]);
    let n = 0;
    const smtpOne = async () => {
      const info = await transport.sendMail({
        from: 'app@bench.example.org',
        to: `r${++n}@example.net`,
        subject: 'bench message',
        text: TEXT,
      });
      return /^250 /.test(info.response);
    };
    const body = (i: number) =>
      JSON.stringify({
        channel: 'email',
        to: `h${i}@example.net`,
        from: 'app@bench.example.org',
        content: { subject: 'bench message', text: TEXT },
      });
    const agent = new http.Agent({ keepAlive: true, maxSockets: SESSIONS });
    const httpOne = async () => (await postSendRaw(agent, ready.http, ready.key, body(++n))) === 202;

    // Warm-up of each, not reported; then each measured twice, alternating, to even out drift.
    await drive(2, SESSIONS * 2, smtpOne);
    await drive(2, SESSIONS * 2, httpOne);
    const smtp: number[] = [];
    const api: number[] = [];
    // The daemon's CPU time per accepted message on each path: whether the server or the client is the limit.
    const cpu = { smtp: 0, api: 0, smtpN: 0, apiN: 0, clientSmtp: 0, clientApi: 0 };
    const own = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    };
    let failed = 0;
    const pid = child.pid!;
    for (let round = 0; round < 2; round++) {
      let c0 = cpuSeconds(pid);
      let o0 = own();
      const s = await drive(SECONDS / 2, SESSIONS * 2, smtpOne);
      cpu.smtp += cpuSeconds(pid) - c0;
      cpu.clientSmtp += own() - o0;
      cpu.smtpN += (s.perSecond * SECONDS) / 2;
      c0 = cpuSeconds(pid);
      o0 = own();
      const h = await drive(SECONDS / 2, SESSIONS * 2, httpOne);
      cpu.api += cpuSeconds(pid) - c0;
      cpu.clientApi += own() - o0;
      cpu.apiN += (h.perSecond * SECONDS) / 2;
      smtp.push(s.perSecond);
      api.push(h.perSecond);
      failed += s.failed + h.failed;
    }
    transport.close();
    agent.destroy();
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const s = mean(smtp);
    const h = mean(api);
    console.log(`submission (nodemailer pool, ${SESSIONS} sessions, 5 KiB)  ${s.toFixed(0).padStart(6)} msg/s`);
    console.log(`POST /v1/send-raw (${SESSIONS} keep-alive connections)      ${h.toFixed(0).padStart(6)} msg/s`);
    console.log(`submission / send-raw                              ${(s / h).toFixed(2).padStart(6)}   (goal ≥ 0.90)`);
    const ms = (sec: number, n: number) => ((sec * 1000) / n).toFixed(2);
    console.log(`daemon CPU per message: submission ${ms(cpu.smtp, cpu.smtpN)} ms, send-raw ${ms(cpu.api, cpu.apiN)} ms`);
    console.log(`client CPU per message: nodemailer ${ms(cpu.clientSmtp, cpu.smtpN)} ms, HTTP ${ms(cpu.clientApi, cpu.apiN)} ms`);
    if (failed) console.log(`failed sends: ${failed}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
  }
}
