// Real scanners on loopback for the inbound tests: Debian's rspamd (its DNS pointed at the
// loopback DNS server, no controller, no Redis, nothing reaching the internet) and ClamAV's clamd
// with a signature database of our own (freshclam cannot download one offline: the database is
// one MD5 signature of the EICAR test file, which clamd loads like any other). A missing binary
// fails the test: `.ci/run` installs both.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';
import { until } from './until.js';

interface T {
  teardown(fn: () => unknown): void;
}

/** The 68-byte EICAR anti-virus test file. */
export const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';
/** The GTUBE string every rspamd scores as spam. */
export const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

/** Polls `ready` with the shared bounded poll; a scanner that exits first fails at once. */
async function started(
  ready: () => Promise<boolean>,
  what: string,
  child: ChildProcess,
  output: () => string,
  timeoutMs: number,
): Promise<void> {
  let exited = false;
  try {
    await until(
      `${what} to answer`,
      () => {
        if (child.exitCode === null) return ready();
        exited = true;
        throw new Error(`${what} exited with ${child.exitCode}`);
      },
      timeoutMs,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}${exited ? '' : ' (it did not start)'}: ${output().slice(-2000)}`);
  }
}

function start(t: T, cmd: string, args: string[], cwd: string): { child: ChildProcess; output: () => string } {
  let out = '';
  const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  child.on('error', (err) => (out += `\n${cmd}: ${err.message}`));
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
  return { child, output: () => out };
}

/** rspamd's normal worker on a free port; resolves with its URL once /ping answers. */
export async function startRspamd(t: T, dnsAddress: string): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-rspamd-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const d of ['local.d', 'override.d', 'db', 'run', 'log']) mkdirSync(path.join(dir, d));
  const port = await freePort();
  writeFileSync(path.join(dir, 'override.d', 'worker-normal.inc'), `bind_socket = "127.0.0.1:${port}";\ncount = 1;\n`);
  for (const w of ['controller', 'proxy', 'fuzzy']) writeFileSync(path.join(dir, 'override.d', `worker-${w}.inc`), 'enabled = false;\n');
  writeFileSync(path.join(dir, 'local.d', 'options.inc'), `dns { nameserver = ["${dnsAddress}"]; timeout = 1s; retransmits = 1; }\n`);
  writeFileSync(path.join(dir, 'local.d', 'logging.inc'), 'type = "console"; level = "error";\n');
  writeFileSync(path.join(dir, 'local.d', 'fuzzy_check.conf'), 'enabled = false;\n');
  const { child, output } = start(
    t,
    'rspamd',
    [
      '-f',
      '-i',
      '-u',
      'root',
      '-g',
      'root',
      '-c',
      '/etc/rspamd/rspamd.conf',
      ...['LOCAL_CONFDIR', 'DBDIR', 'RUNDIR', 'LOGDIR'].map(
        (v, i) => `--var=${v}=${[dir, path.join(dir, 'db'), path.join(dir, 'run'), path.join(dir, 'log')][i]}`,
      ),
    ],
    dir,
  );
  const url = `http://127.0.0.1:${port}`;
  await started(
    () =>
      fetch(`${url}/ping`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.ok,
        () => false,
      ),
    'rspamd',
    child,
    output,
    120_000,
  );
  return url;
}

/** clamd on a free port with the EICAR signature; resolves with its address (host:port). */
export async function startClamd(t: T): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-clamd-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'db'));
  writeFileSync(
    path.join(dir, 'db', 'postern-test.hdb'),
    `${createHash('md5').update(EICAR).digest('hex')}:${EICAR.length}:Postern.Test.Eicar\n`,
  );
  const port = await freePort();
  writeFileSync(
    path.join(dir, 'clamd.conf'),
    [
      `Foreground yes`,
      `TCPSocket ${port}`,
      `TCPAddr 127.0.0.1`,
      `DatabaseDirectory ${path.join(dir, 'db')}`,
      `LogFile ${path.join(dir, 'clamd.log')}`,
      `PidFile ${path.join(dir, 'clamd.pid')}`,
      `User root`,
      '',
    ].join('\n'),
  );
  // Debian puts it in /usr/sbin, which a non-root PATH may lack.
  const bin = existsSync('/usr/sbin/clamd') ? '/usr/sbin/clamd' : 'clamd';
  const { child, output } = start(t, bin, ['-c', path.join(dir, 'clamd.conf')], dir);
  const ping = () =>
    new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      let got = '';
      s.on('data', (d: Buffer) => (got += d.toString()));
      s.on('error', () => resolve(false));
      s.on('close', () => resolve(got.startsWith('PONG')));
      s.on('connect', () => s.write('zPING\0'));
    });
  await started(ping, 'clamd', child, output, 60_000);
  return `127.0.0.1:${port}`;
}
