// Shared benchmark plumbing: child processes for the servers under test (so the load generator
// does not share their event loop), autocannon runs, and figure formatting.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { main as cli } from '../src/cli.js';
import { LAUNCH_FLAGS } from '../src/lib/heap-sizes.js';
import type { DnsServer } from '../test/helpers/dns-server.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface ChildServer {
  child: ChildProcess;
  port: number;
  smtp?: number;
  /** The metrics listener's port (null when metrics.enabled is false). */
  metrics?: number | null;
  stop(): Promise<void>;
}

/** Peak RSS in bytes since the process started (VmHWM); NaN once it has gone. */
export function peakRss(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds (user + system) the process used so far, or only its thread `tid` (the main thread's
 * id is the pid); NaN once it has gone.
 */
export function cpuSeconds(pid: number, tid?: number): number {
  try {
    // /proc/PID/stat: fields 14 and 15 are utime and stime in clock ticks (100 per second on Linux).
    const f = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8')
      .split(') ')[1]
      .split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

function waitForLine(child: ChildProcess, match: (j: any) => boolean): Promise<any> {
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const j = JSON.parse(line);
        if (match(j)) resolve(j);
      } catch {
        // not JSON
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

const stopper = (child: ChildProcess) => () =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.on('exit', () => resolve());
    child.kill('SIGTERM');
  });

/**
 * `postern serve` from the build, on a fresh data dir (or env's POSTERN_DATA_DIR); resolves at its
 * ready line. `nodeArgs` go before the script (e.g. `--cpu-prof`).
 */
export async function startPostern(
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<ChildServer & { dataDir: string; env: Record<string, string> }> {
  const dataDir = env.POSTERN_DATA_DIR ?? mkdtempSync(path.join(tmpdir(), 'postern-bench-'));
  const fullEnv = {
    POSTERN_DATA_DIR: dataDir,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_METRICS_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_LOG_LEVEL: 'info',
    POSTERN_RATE_LIMIT_SEND: '0',
    POSTERN_RATE_LIMIT_READ: '0',
    ...env,
  };
  // The flags every shipped launcher passes (src/lib/heap-sizes.ts): the bench measures what ships.
  const child = spawn(process.execPath, [...LAUNCH_FLAGS, ...nodeArgs, path.join(ROOT, 'bin', 'postern.js'), 'serve'], {
    env: { ...process.env, ...fullEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.resume();
  const ready = await waitForLine(child, (j) => j.msg === 'ready');
  return { child, port: ready.http, smtp: ready.smtp, metrics: ready.metrics, dataDir, env: fullEnv, stop: stopper(child) };
}

/**
 * The database `env` names, made as an operator would (the CLI creates none of its own): migrated,
 * with workspace `bench` (on `plan` when given) and one key of `keyEnv`, whose secret it returns.
 */
export async function benchWorkspace(env: Record<string, string>, opts: { keyEnv: 'live' | 'test'; plan?: string }): Promise<string> {
  const quiet = { out: () => {}, err: () => {} };
  let out = '';
  await cli(['migrate'], env, quiet);
  await cli(['workspace', 'create', '--slug', 'bench', '--name', 'Bench', ...(opts.plan ? ['--plan', opts.plan] : [])], env, quiet);
  await cli(['key', 'create', '--workspace', 'bench', '--env', opts.keyEnv], env, { out: (t) => (out += t), err: () => {} });
  return JSON.parse(out).secret as string;
}

/**
 * A sending domain of workspace `bench`, claimed and verified as an operator would: `domain add`
 * prints its records (MX and DKIM), `dns` (the bench's loopback DNS server) publishes them,
 * `domain verify` checks them. Mail from the domain is then DKIM-signed. `env` must point the CLI at `dns`.
 */
export async function benchSigningDomain(env: Record<string, string>, dns: Pick<DnsServer, 'set'>, domain: string): Promise<void> {
  const capture = async (argv: string[]) => {
    let out = '';
    let err = '';
    const code = await cli(argv, env, { out: (t) => (out += t), err: (t) => (err += t) });
    if (code !== 0) throw new Error(`postern ${argv.join(' ')}: ${err}`);
    return JSON.parse(out) as { id: string; status: string; records: { type: string; name: string; value: string; priority?: number }[] };
  };
  const claimed = await capture(['domain', 'add', '--workspace', 'bench', '--domain', domain]);
  for (const r of claimed.records) {
    if (r.type === 'TXT') dns.set(r.name, [{ type: 'TXT', data: r.value }]);
    if (r.type === 'MX') dns.set(r.name, [{ type: 'MX', data: { preference: r.priority ?? 10, exchange: r.value } }]);
  }
  const verified = await capture(['domain', 'verify', claimed.id, '--workspace', 'bench']);
  if (verified.status !== 'verified') throw new Error(`${domain} is ${verified.status} after publishing its records`);
}

/** The bare Express handler every HTTP figure is compared with. */
export const startBareExpress = (): Promise<ChildServer> => startScript('bare-express.ts');

/** A bench/ script run under tsx as its own process; resolves at its `{"msg":"ready","port":N}` line. */
export async function startScript(file: string, env: Record<string, string> = {}): Promise<ChildServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', file)], {
    env: { ...process.env, ...env },
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = await waitForLine(child, (j) => j.msg === 'ready');
  return { child, port: ready.port, stop: stopper(child) };
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  total: number;
}

/** Runs autocannon for `seconds` after a short warm-up. */
export async function load(opts: autocannon.Options & { seconds?: number; warmup?: number }): Promise<LoadResult> {
  const { seconds = 8, warmup = 2, ...rest } = opts;
  if (warmup > 0) await autocannon({ ...rest, duration: warmup });
  const r = await autocannon({ connections: 20, ...rest, duration: seconds });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    total: r.requests.total,
  };
}

export function fmt(name: string, r: LoadResult): string {
  return `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${String(r.p50).padStart(3)} ms   p99 ${String(r.p99).padStart(3)} ms   non-2xx ${r.non2xx}   errors ${r.errors}`;
}

/** POSTs a JSON body to `POST /v1/send-raw` on `port` through `agent`; resolves with the status. */
export function postSendRaw(agent: http.Agent, port: number, key: string, body: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/send-raw',
        method: 'POST',
        agent,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** CPU seconds per thread name of a process (/proc/PID/task/*: comm), summed over threads of one name. */
export function threadCpu(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const name = process.env.BENCH_THREADS_BY_ID
          ? tid
          : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() + (tid === String(pid) ? ' (main)' : '');
        const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
        out[name] = (out[name] ?? 0) + (Number(f[11]) + Number(f[12])) / 100;
      } catch {
        // the thread ended
      }
    }
  } catch {
    // the process ended
  }
  return out;
}
