// A PostgreSQL server of the test's own (initdb + pg_ctl on a free port, in a temporary directory),
// for drills that stop, restart or cut off the database: the shared server on 5432 is never
// touched. Run as the `postgres` user when the tests run as root (PostgreSQL refuses root).
import { execFile } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './ports.js';

const run = promisify(execFile);

export interface PrivatePostgres {
  url: string;
  port: number;
  /** Stops the server: `fast` ends every session with 57P01, as a restart or a planned failover does. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Ends every session of the test's database but this one (what a failover does to clients). */
  terminateBackends(): Promise<number>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => path.join(root, v, 'bin')).find((d) => existsSync(path.join(d, 'pg_ctl')));
  if (!found) throw new Error('PostgreSQL server binaries (initdb, pg_ctl) are not installed under /usr/lib/postgresql');
  return found;
}

/** `settings` are more postgresql.conf lines (`shared_preload_libraries = 'pg_stat_statements'`). */
export async function startPrivatePostgres(
  t: { teardown(fn: () => unknown): void },
  opts: { settings?: string[] } = {},
): Promise<PrivatePostgres> {
  const bin = binDir();
  const asRoot = userInfo().uid === 0;
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-pg-'));
  const data = path.join(dir, 'data');
  const port = await freePort();
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout), Number(gid));
  }
  const as = (cmd: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args]) : run(path.join(bin, cmd), args);
  await as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const conf = [
    `port = ${port}`,
    `listen_addresses = '127.0.0.1'`,
    `unix_socket_directories = '${dir}'`,
    'fsync = off',
    'full_page_writes = off',
    'max_connections = 100',
    ...(opts.settings ?? []),
  ];
  // Appended to initdb's file (root may write it; the owner stays postgres).
  appendFileSync(path.join(data, 'postgresql.conf'), '\n' + conf.join('\n') + '\n');
  const ctl = (...args: string[]) => as('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), ...args]);
  const start = async () => {
    await ctl('-w', '-t', '120', 'start');
  };
  await start();
  let running = true;
  t.teardown(async () => {
    if (running) await ctl('-m', 'immediate', '-w', 'stop').catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    async stop(mode = 'fast') {
      await ctl('-m', mode, '-w', '-t', '120', 'stop');
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async terminateBackends() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const r = await c.query(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
        );
        return r.rows[0].n as number;
      } finally {
        await c.end();
      }
    },
  };
}
