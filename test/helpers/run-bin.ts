// Runs the real `postern` binary (bin/postern.js, from dist/) to its exit, with stderr a pipe, and
// reads what a first start leaves for the operator.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN } from './spawn.js';

export interface BinResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `postern …argv` in `cwd` with exactly `env` (no inherited POSTERN_* variables unless given). */
export function runBin(
  argv: string[],
  opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; uid?: number; gid?: number } = {},
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
    execFile(
      process.execPath,
      [BIN, ...argv],
      { cwd: opts.cwd, env: { ...inherited, ...opts.env }, timeout: opts.timeoutMs ?? 60_000, uid: opts.uid, gid: opts.gid },
      (err, stdout, stderr) => {
        if (scratch) rmSync(scratch, { recursive: true, force: true });
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
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
