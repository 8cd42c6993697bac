// `postern restore` never replaces a database a running Postern uses, --force or not: on SQLite the
// daemon holds a lock beside the file for its lifetime (the real binary, stopped with SIGTERM or
// killed with SIGKILL), on PostgreSQL the registered nodes that still beat hold it. Mail accepted
// after a refused restore is there after the next start.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { runBin, spawnDaemonIn as startBin } from '../helpers/run-bin.js';
import type { Spawned } from '../helpers/spawn.js';

async function send(daemon: Spawned, key: string, to: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${daemon.http}/v1/send-raw`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to, channel: 'email', content: { subject: 'Hi', text: 'x' } }),
  });
  const body = (await res.json()) as { id: string };
  if (res.status !== 202) throw new Error(`send answered ${res.status}: ${JSON.stringify(body)}`);
  return body.id;
}

async function messageStatus(daemon: Spawned, key: string, id: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${daemon.http}/v1/messages/${id}`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

const quiet = (dataDir: string) => ({ POSTERN_DATA_DIR: dataDir, POSTERN_LOG_LEVEL: 'warn' });

t.test('SQLite: restore --force under a running daemon exits 2 and mail accepted afterwards survives a restart', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-restore-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const backup = path.join(t.testdir({}), 'postern.backup');
  const first = await startBin(t, dataDir);
  const before = await send(first.daemon, first.key, 'before@example.com');
  const made = await runBin(['backup', backup], { env: quiet(dataDir) });
  t.equal(made.code, 0, made.stderr);

  const refused = await runBin(['restore', backup, '--force'], { env: quiet(dataDir) });
  t.equal(refused.code, 2, 'refused with exit 2');
  t.match(
    refused.stderr,
    /^postern: the database .*postern\.sqlite is in use by a running Postern \(registered: pid \d+ on .+\): stop the daemon/,
  );
  t.match(refused.stderr, /--force does not override this/);

  const after = await send(first.daemon, first.key, 'after@example.com');
  await first.stop();
  const second = await startBin(t, dataDir);
  t.equal(await messageStatus(second.daemon, second.key, before), 200, 'the message accepted before is there');
  t.equal(await messageStatus(second.daemon, second.key, after), 200, 'the message accepted after the refused restore is there');
  await second.stop();

  const restored = await runBin(['restore', backup, '--force'], { env: quiet(dataDir) });
  t.equal(restored.code, 0, `with the daemon stopped, restore works: ${restored.stderr}`);
  const third = await startBin(t, dataDir);
  t.equal(await messageStatus(third.daemon, third.key, before), 200, 'the backup is what the database now holds');
  t.equal(await messageStatus(third.daemon, third.key, after), 404, 'what came after the backup is not');
});

t.test('SQLite: the lock of a daemon killed with SIGKILL does not block a restore', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-restore-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const backup = path.join(t.testdir({}), 'postern.backup');
  const bin = await startBin(t, dataDir);
  await send(bin.daemon, bin.key, 'one@example.com');
  t.equal((await runBin(['backup', backup], { env: quiet(dataDir) })).code, 0);
  bin.daemon.child.kill('SIGKILL');
  await bin.daemon.exited;
  const restored = await runBin(['restore', backup, '--force'], { env: quiet(dataDir) });
  t.equal(restored.code, 0, restored.stderr);
});

t.test('PostgreSQL: restore refuses while a node is registered and beating, and gives the pg_restore line once none is', async (t) => {
  if (!testDatabases().includes('postgres')) return;
  const d = await bootDaemon(t, { db: 'postgres' });
  const env = { POSTERN_DATABASE_URL: d.env.POSTERN_DATABASE_URL, POSTERN_DATA_DIR: d.dataDir, POSTERN_LOG_LEVEL: 'warn' };
  const refused = await runBin(['restore', '/tmp/p.dump', '--force'], { env });
  t.equal(refused.code, 2);
  t.match(refused.stderr, /^postern: the database is in use by 1 running node \(pid \d+ on .+; postern nodes\): stop every node first/);
  t.notMatch(refused.stderr, /pg_restore/, 'no restore line while a node runs');
  await d.stop();
  const allowed = await runBin(['restore', '/tmp/p.dump', '--force'], { env });
  t.match(allowed.stderr, /pg_restore --clean --if-exists --no-owner --dbname=/);
  t.notMatch(allowed.stderr, /in use/);
});
