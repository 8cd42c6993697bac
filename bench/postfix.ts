// A throwaway Postfix beside Postern in a benchmark, so that the ratio is one command: its own
// configuration, queue and log under a temporary directory, smtpd on a free loopback port, and
// every message relayed to Postfix's own `smtp-sink` on another (the method in
// docs/performance.md#postfix-beside-postern). Postfix fsyncs each queue file before its 250 and
// verifies nothing. Started only when Postfix is installed and the bench runs as root (Postfix's
// daemons drop to the `postfix` user); BENCH_POSTFIX=0 leaves it out.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../test/helpers/ports.js';

const run = promisify(execFile);
const POSTFIX = '/usr/sbin/postfix';
const SINK = '/usr/sbin/smtp-sink';

export interface Postfix {
  /** smtpd's port on 127.0.0.1. */
  port: number;
  version: string;
  /** Resolves once the queue is empty (every accepted message relayed to the sink), or after `timeoutMs`. */
  drained(timeoutMs?: number): Promise<boolean>;
  stop(): Promise<void>;
}

async function listening(port: number, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/**
 * Starts the throwaway Postfix, or says why it cannot run here. It relays to its own `smtp-sink`,
 * or to `relayPort` on 127.0.0.1 when given (the outbound bench's sink, so both MTAs' deliveries
 * are counted by one clock).
 */
export async function startPostfix(opts: { relayPort?: number } = {}): Promise<Postfix | { unavailable: string }> {
  if (process.env.BENCH_POSTFIX === '0') return { unavailable: 'BENCH_POSTFIX=0' };
  if (!existsSync(POSTFIX) || !existsSync(SINK)) return { unavailable: 'postfix is not installed (apt-get install postfix)' };
  if (process.getuid?.() !== 0) return { unavailable: 'Postfix needs the bench to run as root' };
  const base = mkdtempSync(path.join(tmpdir(), 'postern-bench-postfix-'));
  chmodSync(base, 0o755); // Postfix's daemons (user postfix) walk into it
  const conf = path.join(base, 'conf');
  const queue = path.join(base, 'queue');
  const data = path.join(base, 'data');
  const port = await freePort();
  const sinkPort = opts.relayPort ?? (await freePort());
  for (const dir of [conf, queue, data]) mkdirSync(dir);
  const { stdout: version } = await run('postconf', ['-dh', 'mail_version']);
  writeFileSync(
    path.join(conf, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${queue}`,
      `data_directory = ${data}`,
      'mail_owner = postfix',
      'setgid_group = postdrop',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'myhostname = postfix.bench.test',
      'mydestination =',
      `relayhost = [127.0.0.1]:${sinkPort}`,
      'mynetworks = 127.0.0.0/8',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      'smtp_tls_security_level = none',
      `maillog_file_prefixes = ${base}`,
      `maillog_file = ${path.join(base, 'maillog')}`,
      // Room for 100 client sessions besides the queue's own processes.
      'default_process_limit = 300',
      '',
    ].join('\n'),
  );
  // Debian's master.cf with smtpd on our port, outside a chroot (the queue is not where one expects).
  const master = readFileSync('/etc/postfix/master.cf', 'utf8').replace(
    /^smtp\s+inet\s.*smtpd$/m,
    `127.0.0.1:${port} inet n - n - - smtpd`,
  );
  writeFileSync(path.join(conf, 'master.cf'), master);
  if (existsSync('/etc/postfix/dynamicmaps.cf'))
    writeFileSync(path.join(conf, 'dynamicmaps.cf'), readFileSync('/etc/postfix/dynamicmaps.cf'));
  const { stdout: uid } = await run('id', ['-u', 'postfix']);
  chownSync(data, Number(uid.trim()), -1);

  const sink: ChildProcess | null = opts.relayPort
    ? null
    : spawn(SINK, ['-u', 'postfix', '-c', `127.0.0.1:${sinkPort}`, '1000'], { stdio: 'ignore' });
  const cleanup = async () => {
    await run(POSTFIX, ['-c', conf, 'stop']).catch(() => {});
    sink?.kill();
    rmSync(base, { recursive: true, force: true });
  };
  try {
    await run(POSTFIX, ['-c', conf, 'set-permissions']).catch(() => {});
    await run(POSTFIX, ['-c', conf, 'start']);
    if (!(await listening(port, 10_000))) throw new Error('smtpd did not listen');
  } catch (err) {
    const log = existsSync(path.join(base, 'maillog'))
      ? readFileSync(path.join(base, 'maillog'), 'utf8').split('\n').slice(-5).join(' | ')
      : '';
    await cleanup();
    return { unavailable: `postfix did not start: ${(err as Error).message.split('\n')[0]} ${log}` };
  }

  const queued = () => ['incoming', 'active', 'deferred', 'maildrop'].reduce((n, dir) => n + countFiles(path.join(queue, dir)), 0);
  return {
    port,
    version: version.trim(),
    async drained(timeoutMs = 120_000) {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        if (queued() === 0) return true;
        await new Promise((r) => setTimeout(r, 200));
      }
      return false;
    },
    stop: cleanup,
  };
}

function countFiles(dir: string): number {
  let n = 0;
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? countFiles(path.join(dir, e.name)) : 1;
  } catch {
    // not there
  }
  return n;
}
