// Runs the real `postern` binary as a child process, for crash tests (SIGKILL) and lifecycle tests.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

export const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'postern.js');

export interface Spawned {
  child: ChildProcess;
  http: number;
  smtp: number;
  /** The metrics listener's port (null when disabled). */
  metrics: number | null;
  lines: string[];
  stderr: string[];
  exited: Promise<number | null>;
}

/**
 * Starts `postern serve` and resolves once it prints its ready line. `command: BIN` runs the file
 * itself, through its first line, as `npx postern` does; by default `node bin/postern.js`.
 */
export function spawnDaemon(env: Record<string, string>, args: string[] = [], opts: { command?: string } = {}): Promise<Spawned> {
  const child = spawn(opts.command ?? process.execPath, [...(opts.command ? [] : [BIN]), 'serve', ...args], {
    // Port 0 for metrics too, so daemons of parallel tests never meet on 9464.
    env: { ...process.env, POSTERN_LOG_LEVEL: 'info', POSTERN_METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const stderr: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  createInterface({ input: child.stderr }).on('line', (l) => stderr.push(l));
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.on('line', (line) => {
      lines.push(line);
      try {
        const j = JSON.parse(line);
        if (j.msg === 'ready') resolve({ child, http: j.http, smtp: j.smtp, metrics: j.metrics, lines, stderr, exited });
      } catch {
        // not a log line
      }
    });
    void exited.then((code) => reject(new Error(`postern exited with ${code} before ready: ${stderr.join('\n')}`)));
  });
}
