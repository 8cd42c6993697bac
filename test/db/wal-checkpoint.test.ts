// WAL checkpoints from a thread while the daemon is busy (db/wal-checkpoint.ts): while commits are
// frequent the daemon's connection stops checkpointing in its commits and the thread copies the
// WAL into the database file; a quiet daemon, a thread at rest and a lost thread leave checkpoints
// to the connection, as SQLite does by default.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { createCheckpointer } from '../../src/db/wal-checkpoint.js';

function walDatabase(t: { teardown(fn: () => unknown): void }): { dir: string; file: string; sqlite: SQLite.Database } {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-checkpoint-'));
  const file = path.join(dir, 'db.sqlite');
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.exec('CREATE TABLE t (v TEXT)');
  t.teardown(() => {
    if (sqlite.open) sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, file, sqlite };
}

const autocheckpoint = (sqlite: SQLite.Database) => sqlite.pragma('wal_autocheckpoint', { simple: true });

t.test('the thread copies the WAL into the database after commits', async (t) => {
  const { dir, file, sqlite } = walDatabase(t);
  const checkpointer = createCheckpointer(file, sqlite, { everyMs: 0, busyCommits: 1, busySeconds: 1 });
  t.teardown(() => checkpointer.close());
  t.equal(autocheckpoint(sqlite), 1000, 'until the daemon is busy, the connection checkpoints as SQLite does');
  t.equal(await checkpointer.settled(), null, 'no commit, no checkpoint');

  const insert = sqlite.prepare('INSERT INTO t (v) VALUES (?)');
  // 1,500 commits of 2 KiB rows: far past the 1,000 pages at which SQLite would have checkpointed.
  for (let i = 0; i < 1500; i++) {
    insert.run(`${i}:${'x'.repeat(2048)}`);
    checkpointer.committed();
  }
  const pass = await checkpointer.settled();
  t.equal(autocheckpoint(sqlite), 0, 'busy: the connection no longer checkpoints in its commits');
  t.ok(pass && pass.log > 0, 'a pass ran');
  t.equal(pass!.checkpointed, pass!.log, 'every frame of the WAL is in the database file');

  // The database file alone, without its WAL, holds every row.
  const copy = path.join(dir, 'copy.sqlite');
  copyFileSync(file, copy);
  t.notOk(existsSync(`${copy}-wal`));
  const alone = new SQLite(copy, { readonly: true });
  t.equal((alone.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 1500);
  alone.close();
  t.notOk(checkpointer.lost);
});

t.test('an idle thread rests, and the next commit starts another', async (t) => {
  const { file, sqlite } = walDatabase(t);
  const checkpointer = createCheckpointer(file, sqlite, { everyMs: 0, busyCommits: 1, busySeconds: 1, restAfterMs: 0 });
  t.teardown(() => checkpointer.close());
  const insert = sqlite.prepare('INSERT INTO t (v) VALUES (?)');
  t.notOk(checkpointer.up, 'no thread before the first commit');
  insert.run('a');
  checkpointer.committed();
  t.match(await checkpointer.settled(), { log: Number });
  t.equal(checkpointer.started, 1);
  // Resting: the thread closes its connection and ends (waited for, up to half a minute).
  for (let polls = 0; checkpointer.up && polls < 6000; polls++) await new Promise((r) => setTimeout(r, 5));
  t.notOk(checkpointer.up, 'the idle thread stopped');
  t.notOk(checkpointer.lost, 'resting is not a loss');
  t.equal(autocheckpoint(sqlite), 1000, 'at rest, the connection checkpoints itself');

  insert.run('b');
  checkpointer.committed();
  const pass = await checkpointer.settled();
  t.equal(checkpointer.started, 2, 'a new thread for the next commit');
  t.equal(pass!.checkpointed, pass!.log, 'and it checkpoints');
});

t.test('a quiet daemon starts no thread', async (t) => {
  const { file, sqlite } = walDatabase(t);
  const checkpointer = createCheckpointer(file, sqlite, { everyMs: 0, busyCommits: 50 });
  t.teardown(() => checkpointer.close());
  const insert = sqlite.prepare('INSERT INTO t (v) VALUES (?)');
  for (let i = 0; i < 10; i++) {
    insert.run(String(i));
    checkpointer.committed();
  }
  t.equal(await checkpointer.settled(), null, 'no pass');
  t.equal(checkpointer.started, 0, 'no thread');
  t.equal(autocheckpoint(sqlite), 1000, 'SQLite checkpoints as it always does');
});

t.test('a thread starts only after two busy seconds in a row', async (t) => {
  const { file, sqlite } = walDatabase(t);
  let ms = 0;
  const checkpointer = createCheckpointer(file, sqlite, { everyMs: 0, busyCommits: 3, now: () => ms });
  t.teardown(() => checkpointer.close());
  const insert = sqlite.prepare('INSERT INTO t (v) VALUES (?)');
  const commits = async (n: number, at: number) => {
    ms = at;
    for (let i = 0; i < n; i++) {
      insert.run('x');
      checkpointer.committed();
    }
    await checkpointer.settled();
  };
  await commits(5, 0);
  t.equal(checkpointer.started, 0, 'one busy second (a start’s migrations): no thread');
  await commits(5, 2500);
  t.equal(checkpointer.started, 0, 'another, not the next one: the run starts again');
  await commits(2, 3600);
  t.equal(checkpointer.started, 0, 'the next second, but quiet');
  await commits(3, 4700);
  await commits(2, 5800);
  t.equal(checkpointer.started, 0, 'busy, then quiet');
  await commits(3, 6900);
  t.equal(checkpointer.started, 0, 'busy again: one second so far');
  await commits(3, 8000);
  t.equal(checkpointer.started, 1, 'two busy seconds in a row: the thread starts');
  t.equal(autocheckpoint(sqlite), 0);
});

t.test('a lost thread gives checkpoints back to the connection', async (t) => {
  const { dir, sqlite } = walDatabase(t);
  const lost: unknown[] = [];
  // The thread cannot open its file (a directory), so it stops at once.
  const checkpointer = createCheckpointer(dir, sqlite, { everyMs: 0, busyCommits: 1, busySeconds: 1, onLost: (err) => lost.push(err) });
  t.teardown(() => checkpointer.close());
  sqlite.prepare('INSERT INTO t (v) VALUES (?)').run('a');
  checkpointer.committed();
  await checkpointer.settled();
  t.ok(checkpointer.lost, 'the thread is lost');
  t.equal(lost.length, 1, 'and reported once');
  t.equal(autocheckpoint(sqlite), 1000, 'the connection checkpoints itself again, as SQLite does by default');
  checkpointer.committed();
  t.equal(await checkpointer.settled(), null, 'no thread is started again');
});

t.test('a close during a pass waits for the thread, even with nothing else keeping the process alive', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-checkpoint-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // The process's only work is the close: if the thread were let go before it ended, the process
  // would end with the close unfinished and "closed" never printed (a daemon's stop, cut short).
  const script = `
    import SQLite from 'better-sqlite3';
    import { createCheckpointer } from ${JSON.stringify(new URL('../../src/db/wal-checkpoint.ts', import.meta.url).href)};
    const file = ${JSON.stringify(path.join(dir, 'db.sqlite'))};
    const sqlite = new SQLite(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('wal_autocheckpoint = 0');
    sqlite.exec('CREATE TABLE t (v TEXT)');
    // 32 MiB in the WAL, so the thread's first pass is still copying when the close begins.
    const insert = sqlite.prepare('INSERT INTO t (v) VALUES (?)');
    for (let i = 0; i < 512; i++) insert.run('x'.repeat(64 * 1024));
    const checkpointer = createCheckpointer(file, sqlite, { everyMs: 0, busyCommits: 1, busySeconds: 1 });
    checkpointer.committed();
    while (!checkpointer.up) await new Promise((r) => setTimeout(r, 0)); // the pass is asked for
    await checkpointer.close();
    console.log(checkpointer.up ? 'closed, thread up' : 'closed');
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(r.stderr, '');
  t.equal(r.stdout.trim(), 'closed', 'the close finished, and the thread with it');
});

t.test('the daemon’s database: its commits are durable and its close truncates the WAL', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-checkpoint-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'postern.sqlite');
  const handle = openDatabase({ dialect: 'sqlite', file }, { checkpointThread: true });
  await handle.db.schema.createTable('t').addColumn('v', 'text').execute();
  for (let i = 0; i < 300; i++) {
    await handle.db
      .insertInto('t' as never)
      .values({ v: 'y'.repeat(4096) })
      .execute();
  }
  const walBefore = statSync(`${file}-wal`).size;
  t.ok(walBefore > 0, 'the WAL holds the commits');
  await handle.close();
  t.equal(statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0, 0, 'closed: the WAL is empty or gone');
  const reopened = new SQLite(file, { readonly: true });
  t.equal((reopened.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 300);
  reopened.close();
});
