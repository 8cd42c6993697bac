// Runs the real `postern` binary (bin/postern.js, from dist/) to its exit, with stderr a pipe, and
// reads what a first start leaves for the operator.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startDnsServer } from './dns-server.js';
import { BIN, spawnDaemon, type Spawned } from './spawn.js';

export interface BinResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `postern …argv` in `cwd` with exactly `env` (no inherited POSTERN_* variables unless given). */
export function runBin(
  argv: string[],
  opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; uid?: number; gid?: number; input?: string } = {},
): Promise<BinResult> {
  const inherited: Record<string, string | undefined> = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('POSTERN_')),
  );
  let scratch: string | null = null;
  if (opts.uid !== undefined) {
    // The test runner hooks every child it spawns and has it write a record under its own
    // directory at exit, which another user may not write: point that child's record elsewhere.
    scratch = mkdtempSync(path.join(tmpdir(), 'postern-as-user-'));
    chmodSync(scratch, 0o777);
    inherited._TAPJS_PROCESSINFO_CWD_ = scratch;
  }
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...argv],
      { cwd: opts.cwd, env: { ...inherited, ...opts.env }, timeout: opts.timeoutMs ?? 60_000, uid: opts.uid, gid: opts.gid },
      (err, stdout, stderr) => {
        if (scratch) rmSync(scratch, { recursive: true, force: true });
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    // Standard input: what the test gives (a password), else closed at once.
    child.stdin?.end(opts.input ?? '');
  });
}

/** The keys a first start wrote to `<dataDir>/bootstrap-keys.txt` (stderr not a terminal). */
export function readBootstrapKeys(dataDir: string): { live: string; test: string } {
  const text = readFileSync(path.join(dataDir, 'bootstrap-keys.txt'), 'utf8');
  const live = /live: (sk_live_\S+)/.exec(text)?.[1];
  const test = /test: (sk_test_\S+)/.exec(text)?.[1];
  if (!live || !test) throw new Error(`no keys in ${dataDir}/bootstrap-keys.txt: ${text}`);
  return { live, test };
}

/**
 * Starts the real binary in a fresh data directory with `ca` (PEM) trusted through
 * NODE_EXTRA_CA_CERTS, which is how direct delivery is told of a private CA, and stops it at
 * teardown; returns it with its first-start live key. `env` adds to or overrides the defaults.
 */
export async function spawnDaemonTrusting(
  t: { teardown(fn: () => unknown): void },
  ca: string,
  env: Record<string, string>,
): Promise<{ daemon: Spawned; key: string }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-ca-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const caFile = path.join(dataDir, 'test-ca.pem');
  writeFileSync(caFile, ca);
  const daemon = await spawnDaemon({
    NODE_EXTRA_CA_CERTS: caFile,
    POSTERN_DATA_DIR: dataDir,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.test',
    POSTERN_RATE_LIMIT_SEND: '0',
    POSTERN_SENDER_CAPS_ENABLED: 'false',
    ...env,
  });
  t.teardown(async () => {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  });
  return { daemon, key: readBootstrapKeys(dataDir).live };
}

/**
 * Starts the real binary on `dataDir` (kept) with a loopback DNS zone, and stops it (SIGTERM) at
 * teardown or by `stop()`; returns it with the test key (`key`) and live key of its first start.
 */
export async function spawnDaemonIn(
  t: { teardown(fn: () => unknown): void },
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ daemon: Spawned; key: string; live: string; stop(): Promise<void> }> {
  const dns = env.POSTERN_DNS_SERVERS ? null : await startDnsServer();
  if (dns) t.teardown(() => dns.close());
  const daemon = await spawnDaemon({
    POSTERN_DATA_DIR: dataDir,
    ...(dns ? { POSTERN_DNS_SERVERS: dns.address } : {}),
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.test',
    POSTERN_RATE_LIMIT_SEND: '0',
    ...env,
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  };
  t.teardown(stop);
  const keys = readBootstrapKeys(dataDir);
  return { daemon, key: keys.test, live: keys.live, stop };
}
