// Nodes of a cluster for the multi-node tests: real `postern serve` processes on loopback ports
// sharing one fresh PostgreSQL database, each in its own data directory. The first node bootstraps
// the database, so its directory holds the bootstrap keys (started together, whichever won). Every node is killed at teardown and
// the database dropped.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freshPostgres } from './databases.js';
import { readBootstrapKeys } from './run-bin.js';
import { spawnDaemon, type Spawned } from './spawn.js';

export interface Cluster {
  url: string;
  nodes: Spawned[];
  /** The first node's bootstrap keys. */
  keys: { live: string; test: string };
  /** The environment of a node whose data directory is `dir` (plus `extra`). */
  env(dir: string, extra?: Record<string, string>): Record<string, string>;
  /** Starts one more node; `extra` adds to the cluster's environment. */
  add(extra?: Record<string, string>): Promise<Spawned>;
  /** POSTs JSON to a node's API with a key. */
  post(node: Spawned, path: string, body: unknown, key?: string): Promise<Response>;
}

export async function startCluster(
  t: { teardown(fn: () => unknown): void },
  opts: { nodes: number; env?: Record<string, string>; together?: boolean },
): Promise<Cluster> {
  const db = await freshPostgres();
  const dirs: string[] = [];
  const nodes: Spawned[] = [];
  t.teardown(async () => {
    for (const n of nodes) n.child.kill('SIGKILL');
    await Promise.all(nodes.map((n) => n.exited));
    await db.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const env = (dir: string, extra: Record<string, string> = {}) => ({
    POSTERN_DATABASE_URL: db.url,
    POSTERN_DATA_DIR: dir,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.test',
    POSTERN_SENDER_CAPS_ENABLED: 'false',
    POSTERN_LOG_LEVEL: 'warn',
    ...opts.env,
    ...extra,
  });
  const add = async (extra: Record<string, string> = {}) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-node-'));
    dirs.push(dir);
    const node = await spawnDaemon(env(dir, extra));
    nodes.push(node);
    return node;
  };
  let keys: Cluster['keys'];
  if (opts.together) {
    // All at once on the empty database: whichever bootstrapped it holds the keys.
    await Promise.all(Array.from({ length: opts.nodes }, () => add()));
    const holder = dirs.find((d) => existsSync(path.join(d, 'bootstrap-keys.txt')));
    if (!holder) throw new Error('no node wrote the bootstrap keys');
    keys = readBootstrapKeys(holder);
  } else {
    await add();
    keys = readBootstrapKeys(dirs[0]);
    for (let i = 1; i < opts.nodes; i++) await add();
  }
  const post = (node: Spawned, route: string, body: unknown, key = keys.live) =>
    fetch(`http://127.0.0.1:${node.http}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  return { url: db.url, nodes, keys, env, add, post };
}
