// A private Postfix for tests and benchmarks: its own configuration, queue and log under a
// temporary directory, smtpd on a free loopback port, every message relayed to one port on
// 127.0.0.1. The system's /etc/postfix and port 25 are never touched: Debian's master.cf is read
// and written elsewhere with smtpd moved. It runs as root (Postfix's daemons drop to the `postfix`
// user), so the caller checks postfixUnavailable() first and decides what a missing Postfix means
// (a test fails, a benchmark leaves Postfix out).
//
// With `sasl`, smtpd is a submission server as a host's own would be: STARTTLS with a self-signed
// certificate (openssl), AUTH only after it, and relaying only for authenticated clients, checked by
// Cyrus SASL against a sasldb of the instance's own (saslpasswd2, from sasl2-bin): nothing of
// /etc/sasl2 or /etc/postfix/sasl is read.
import { execFile, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  watch,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);
const POSTFIX = '/usr/sbin/postfix';
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
  /** smtpd with STARTTLS and AUTH (PLAIN, LOGIN) for this one user; relays only what it authenticated. */
  sasl?: { user: string; password: string };
}

export interface PostfixInstance {
  /** smtpd's port on 127.0.0.1. */
  port: number;
  version: string;
  /** The configuration directory (`postfix -c`, `sendmail -C`). */
  conf: string;
  /** With `sasl`: the name and password a client gives in AUTH. */
  auth: { user: string; pass: string } | null;
  /** Hands a message to Postfix's own sendmail, as a local program would; resolves once it is queued. */
  sendmail(raw: Buffer, envelope: { from: string; to: string[] }): Promise<void>;
  /** Messages in the queue (incoming, active, deferred, maildrop). */
  queued(): number;
  /** The master daemon's pid (every other Postfix process is its child). */
  masterPid(): number;
  /** The last lines of its log, for a failure message. */
  logTail(lines?: number): string;
  /**
   * Rejects with the log line once Postfix logs a delivery deferred or bounced (the peer refused
   * or could not be reached); never resolves. Race it against the arrival a test waits for.
   */
  failure(): Promise<never>;
  stop(): Promise<void>;
}

const SASLPASSWD2 = '/usr/sbin/saslpasswd2';
/** The SASL realm of the instance's one user; also its `myhostname`. */
const REALM = 'postfix.postern.test';

/** Why a private Postfix (with SASL when `sasl`) cannot run here, or null when it can. */
export function postfixUnavailable(opts: { sasl?: boolean } = {}): string | null {
  if (!existsSync(POSTFIX) || !existsSync(SENDMAIL) || !existsSync(MASTER_CF)) return 'postfix is not installed (apt-get install postfix)';
  if (process.getuid?.() !== 0) return 'a private Postfix must be started as root (its daemons drop to the postfix user)';
  if (opts.sasl && !existsSync(SASLPASSWD2)) return 'saslpasswd2 is missing for Postfix with SASL (apt-get install sasl2-bin)';
  return null;
}

/**
 * Starts a private Postfix; resolves once `postfix start` has returned (master -w: the daemon's
 * sockets are open) and smtpd answers. Throws with the tail of its log when it does not start.
 */
export async function startPostfix(opts: PostfixOptions): Promise<PostfixInstance> {
  const why = postfixUnavailable({ sasl: !!opts.sasl });
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
      `myhostname = ${REALM}`,
      'mydestination =',
      `relayhost = [127.0.0.1]:${opts.relayPort}`,
      'mynetworks = 127.0.0.0/8',
      // With SASL, saslSettings says who may relay (a later line would win, with a warning per process).
      ...(opts.sasl ? [] : ['smtpd_relay_restrictions = permit_mynetworks, reject']),
      'smtp_tls_security_level = none',
      `maillog_file_prefixes = ${base}`,
      `maillog_file = ${maillog}`,
      ...(opts.sasl ? await saslSettings(conf, opts.sasl) : []),
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
  chownSync(data, await postfixUid(), -1);

  const logTail = (lines = 10) =>
    existsSync(maillog) ? readFileSync(maillog, 'utf8').split('\n').filter(Boolean).slice(-lines).join('\n') : '(no log)';
  // The log is watched (inotify), not polled: what each change appended is read for a deferral or a
  // bounce. Only what was appended: in a benchmark the log grows by thousands of lines, and reading
  // it whole at each change cost the load generator more CPU per message than its SMTP client.
  const watcher = watch(base);
  let seen = 0;
  const appended = () => {
    if (!existsSync(maillog)) return '';
    const fd = openSync(maillog, 'r');
    try {
      const size = fstatSync(fd).size;
      const chunk = Buffer.alloc(Math.max(0, size - seen));
      const n = readSync(fd, chunk, 0, chunk.length, seen);
      // Up to the last whole line; a line being written is read at the next change.
      const text = chunk.subarray(0, n).toString('utf8');
      const whole = text.slice(0, text.lastIndexOf('\n') + 1);
      seen += Buffer.byteLength(whole);
      return whole;
    } finally {
      closeSync(fd);
    }
  };
  const failed = new Promise<never>((_, reject) => {
    watcher.on('change', () => {
      const line = /^.*status=(?:deferred|bounced).*$/m.exec(appended());
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
    auth: opts.sasl ? { user: opts.sasl.user, pass: opts.sasl.password } : null,
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
    masterPid: () => Number(readFileSync(path.join(queue, 'pid', 'master.pid'), 'utf8').trim()),
    queued: () => ['incoming', 'active', 'deferred', 'maildrop'].reduce((n, dir) => n + countFiles(path.join(queue, dir)), 0),
    logTail,
    failure: () => failed,
    stop,
  };
}

const postfixUid = async () => Number((await run('id', ['-u', 'postfix'])).stdout.trim());

/**
 * main.cf lines for smtpd as a submission server, and what they name: a self-signed certificate,
 * Cyrus's `smtpd.conf` (Postfix's smtpd_sasl_path `smtpd` is its name) and a sasldb holding the user,
 * all in `<conf>/sasl`. That directory, not only cyrus_sasl_config_path: Debian's Postfix 3.7 was
 * seen opening `$config_directory/sasl/smtpd.conf` and then /usr/lib/sasl, whatever that setting
 * said (and without the file, Cyrus falls back to /etc/sasldb2). smtpd runs unchrooted here
 * (master.cf), so the absolute paths are what it opens. The user is created in the realm REALM and
 * smtpd_sasl_local_domain is that realm, so a client logs in with the bare name (smtpd appends the
 * realm: its log says sasl_username=user@REALM); `user@REALM` is accepted too.
 */
async function saslSettings(conf: string, sasl: { user: string; password: string }): Promise<string[]> {
  const dir = path.join(conf, 'sasl');
  mkdirSync(dir);
  const db = path.join(dir, 'sasldb2');
  writeFileSync(
    path.join(dir, 'smtpd.conf'),
    ['pwcheck_method: auxprop', 'auxprop_plugin: sasldb', 'mech_list: PLAIN LOGIN', `sasldb_path: ${db}`, ''].join('\n'),
  );
  await new Promise<void>((resolve, reject) => {
    const child = spawn(SASLPASSWD2, ['-p', '-c', '-f', db, '-u', REALM, sasl.user], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.end(sasl.password);
    child
      .once('error', reject)
      .once('close', (code) => (code === 0 ? resolve() : reject(new Error(`saslpasswd2 exited with ${code}: ${stderr.trim()}`))));
  });
  // smtpd reads the sasldb at each AUTH, as the postfix user; saslpasswd2 made it root's, 0640.
  chownSync(db, await postfixUid(), -1);
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  await run('openssl', [...'req -x509 -newkey rsa:2048 -nodes -days 1'.split(' '), '-subj', `/CN=${REALM}`, '-keyout', key, '-out', cert]);
  return [
    `smtpd_tls_cert_file = ${cert}`,
    `smtpd_tls_key_file = ${key}`,
    'smtpd_tls_security_level = may',
    'smtpd_tls_auth_only = yes',
    'smtpd_sasl_auth_enable = yes',
    'smtpd_sasl_type = cyrus',
    'smtpd_sasl_path = smtpd',
    `cyrus_sasl_config_path = ${dir}`,
    `smtpd_sasl_local_domain = ${REALM}`,
    'smtpd_sasl_security_options = noanonymous',
    'smtpd_relay_restrictions = permit_sasl_authenticated, reject',
  ];
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
