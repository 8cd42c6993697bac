// A private Postfix for tests and benchmarks: its own configuration, queue and log under a
// temporary directory, smtpd on a free loopback port, every message relayed to one port on
// 127.0.0.1. The system's /etc/postfix and port 25 are never touched: Debian's master.cf is read
// and written elsewhere with smtpd moved. It runs as root (Postfix's daemons drop to the `postfix`
// user), so the caller checks postfixUnavailable() first and decides what a missing Postfix means
// (a test fails, a benchmark leaves Postfix out).
import { execFile, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);
export const POSTFIX = '/usr/sbin/postfix';
const SENDMAIL = '/usr/sbin/sendmail';
/** Debian's master.cf as packaged; /etc/postfix/master.cf is made from it at install. */
const MASTER_CF = '/usr/share/postfix/master.cf.dist';

export interface PostfixOptions {
  /** Every message is relayed to this port on 127.0.0.1. */
  relayPort: number;
  /** More main.cf lines, after the ones every instance has (a later line wins). */
  settings?: string[];
  /** The temporary directory's name starts with this. */
  prefix?: string;
}

export interface PostfixInstance {
  /** smtpd's port on 127.0.0.1. */
  port: number;
  version: string;
  /** The configuration directory (`postfix -c`, `sendmail -C`). */
  conf: string;
  /** Hands a message to Postfix's own sendmail, as a local program would; resolves once it is queued. */
  sendmail(raw: Buffer, envelope: { from: string; to: string[] }): Promise<void>;
  /** Messages in the queue (incoming, active, deferred, maildrop). */
  queued(): number;
  /** The last lines of its log, for a failure message. */
  logTail(lines?: number): string;
  /**
   * Rejects with the log line once Postfix logs a delivery deferred or bounced (the peer refused
   * or could not be reached); never resolves. Race it against the arrival a test waits for.
   */
  failure(): Promise<never>;
  stop(): Promise<void>;
}

/** Why a private Postfix cannot run here, or null when it can. */
export function postfixUnavailable(): string | null {
  if (!existsSync(POSTFIX) || !existsSync(SENDMAIL) || !existsSync(MASTER_CF)) return 'postfix is not installed (apt-get install postfix)';
  if (process.getuid?.() !== 0) return 'a private Postfix must be started as root (its daemons drop to the postfix user)';
  return null;
}

/**
 * Starts a private Postfix; resolves once `postfix start` has returned (master -w: the daemon's
 * sockets are open) and smtpd answers. Throws with the tail of its log when it does not start.
 */
export async function startPostfix(opts: PostfixOptions): Promise<PostfixInstance> {
  const why = postfixUnavailable();
  if (why) throw new Error(why);
  const base = mkdtempSync(path.join(tmpdir(), opts.prefix ?? 'postern-postfix-'));
  chmodSync(base, 0o755); // Postfix's daemons (user postfix) walk into it
  const conf = path.join(base, 'conf');
  const queue = path.join(base, 'queue');
  const data = path.join(base, 'data');
  const maillog = path.join(base, 'maillog');
  const port = await freePort();
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
      'myhostname = postfix.postern.test',
      'mydestination =',
      `relayhost = [127.0.0.1]:${opts.relayPort}`,
      'mynetworks = 127.0.0.0/8',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      'smtp_tls_security_level = none',
      `maillog_file_prefixes = ${base}`,
      `maillog_file = ${maillog}`,
      ...(opts.settings ?? []),
      '',
    ].join('\n'),
  );
  // The package's master.cf (not the system's, which may have been changed) with smtpd on our port,
  // outside a chroot (the queue is not where one expects).
  const master = readFileSync(MASTER_CF, 'utf8').replace(/^smtp\s+inet\s.*smtpd$/m, `127.0.0.1:${port} inet n - n - - smtpd`);
  writeFileSync(path.join(conf, 'master.cf'), master);
  if (existsSync('/etc/postfix/dynamicmaps.cf'))
    writeFileSync(path.join(conf, 'dynamicmaps.cf'), readFileSync('/etc/postfix/dynamicmaps.cf'));
  const { stdout: uid } = await run('id', ['-u', 'postfix']);
  chownSync(data, Number(uid.trim()), -1);

  const logTail = (lines = 10) =>
    existsSync(maillog) ? readFileSync(maillog, 'utf8').split('\n').filter(Boolean).slice(-lines).join('\n') : '(no log)';
  // The log is watched (inotify), not polled: each change is read for a deferral or a bounce.
  const watcher = watch(base);
  const failed = new Promise<never>((_, reject) => {
    watcher.on('change', () => {
      const line = existsSync(maillog) ? /^.*status=(?:deferred|bounced).*$/m.exec(readFileSync(maillog, 'utf8')) : null;
      if (line) reject(new Error(`postfix did not deliver: ${line[0]}`));
    });
  });
  failed.catch(() => {}); // rejected with no one racing it yet
  const stop = async () => {
    watcher.close();
    await run(POSTFIX, ['-c', conf, 'stop']).catch(() => {});
    rmSync(base, { recursive: true, force: true });
  };
  try {
    // `postfix start` creates the queue's directories with their owners (no set-permissions, which
    // would also walk the package's own files).
    await run(POSTFIX, ['-c', conf, 'start']);
    await answers(port);
  } catch (err) {
    const message = `postfix did not start: ${(err as Error).message.split('\n')[0]}\n${logTail(5)}`;
    await stop();
    throw new Error(message);
  }

  return {
    port,
    version: version.trim(),
    conf,
    async sendmail(raw, envelope) {
      const child = spawn(SENDMAIL, ['-C', conf, '-i', '-f', envelope.from, '--', ...envelope.to], {
        stdio: ['pipe', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stdin.end(raw);
      const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('close', resolve));
      if (code !== 0) throw new Error(`sendmail exited with ${code}: ${stderr.trim()}`);
    },
    queued: () => ['incoming', 'active', 'deferred', 'maildrop'].reduce((n, dir) => n + countFiles(path.join(queue, dir)), 0),
    logTail,
    failure: () => failed,
    stop,
  };
}

/** Resolves when something accepts a connection on the port, rejects when nothing does. */
function answers(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve()));
    s.once('error', (err) => reject(new Error(`smtpd does not answer on port ${port}: ${err.message}`)));
  });
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
