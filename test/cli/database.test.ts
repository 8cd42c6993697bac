// The database a management command opens: it names it on stderr, and refuses one that does not
// exist or holds no migration (only serve and migrate create a database).
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import t from 'tap';
import { COMMANDS, main } from '../../src/cli.js';
import { freshPostgres, testDatabases } from '../helpers/databases.js';
import { runBin } from '../helpers/run-bin.js';

async function cli(argv: string[], env: Record<string, string>) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, env, { out: (s) => (stdout += s), err: (s) => (stderr += s) });
  return { code, stdout, stderr };
}

// serve and migrate create the database; backup and restore copy it whole (test/cli/backup.test.ts).
// ready asks the running daemon over HTTP (test/cli/ready.test.ts), not the database.
const management = COMMANDS.filter((c) => !['serve', 'migrate', 'backup', 'restore', 'ready'].includes(c.name));

t.test('no SQLite database: every management command refuses in one line naming it, and creates nothing', async (t) => {
  const dir = t.testdir({});
  const file = path.join(dir, 'data', 'postern.sqlite');
  const env = { POSTERN_DATA_DIR: path.join(dir, 'data'), POSTERN_LOG_LEVEL: 'info' };
  t.ok(management.length > 20);
  for (const c of management) {
    const r = await cli(c.name.split(' '), env);
    t.equal(r.code, 2, c.name);
    t.equal(
      r.stderr,
      `postern: no database at ${file}: run "postern migrate" to create it, or point this command at the daemon's database (--config, dataDir, databaseUrl)\n`,
      c.name,
    );
    t.equal(r.stdout, '');
  }
  t.same(readdirSync(dir), [], 'no data directory, database or secrets key');

  const migrated = await cli(['migrate'], env);
  t.equal(migrated.code, 0, migrated.stderr);
  t.match(migrated.stderr, `postern: database SQLite ${file}\n`);
  const list = await cli(['workspace', 'list'], env);
  t.equal(list.code, 0, list.stderr);
  t.same(JSON.parse(list.stdout), []);
  t.equal(list.stderr, `postern: database SQLite ${file}\n`, 'the database it opened, on stderr');
  const quiet = await cli(['workspace', 'list'], { ...env, POSTERN_LOG_LEVEL: 'warn' });
  t.equal(quiet.stderr, '', 'log.level warn leaves the line out');
});

t.test('an empty SQLite file, or one without migrations, is refused the same way', async (t) => {
  const dir = t.testdir({ empty: { 'postern.sqlite': '' }, bare: {} });
  const bare = path.join(dir, 'bare', 'postern.sqlite');
  const db = new SQLite(bare);
  db.exec('create table notes (body text)');
  db.close();
  for (const [name, file] of [
    ['empty', path.join(dir, 'empty', 'postern.sqlite')],
    ['bare', bare],
  ]) {
    const r = await cli(['workspace', 'list'], { POSTERN_DATA_DIR: path.join(dir, name) });
    t.equal(r.code, 2, name);
    t.match(r.stderr, `postern: the database SQLite ${file} is empty (no migration applied): run "postern migrate"`);
    t.equal(r.stderr.trim().split('\n').length, 1);
  }
  t.same(readdirSync(path.join(dir, 'empty')), ['postern.sqlite'], 'nothing added beside the empty file');
});

t.test('a database elsewhere, but no data directory: refused, since the CLI would make a new secrets key there', async (t) => {
  const dir = t.testdir({});
  const env = { POSTERN_DATABASE_URL: `sqlite:${path.join(dir, 'db', 'postern.sqlite')}`, POSTERN_DATA_DIR: path.join(dir, 'data') };
  // migrate makes the data directory too: it is where the daemon keeps its keys.
  t.equal((await cli(['migrate'], env)).code, 0);
  t.ok(existsSync(path.join(dir, 'data')));
  t.equal((await cli(['workspace', 'list'], env)).code, 0);
  const elsewhere = { ...env, POSTERN_DATA_DIR: path.join(dir, 'elsewhere') };
  const r = await cli(['workspace', 'list'], elsewhere);
  t.equal(r.code, 2);
  t.equal(
    r.stderr,
    `postern: no data directory at ${path.join(dir, 'elsewhere')} (dataDir, POSTERN_DATA_DIR), where the daemon keeps the key that encrypts provider credentials: run "postern migrate" to create it, or point this command at the daemon's (--config, dataDir, or secrets.key)\n`,
  );
  t.notOk(existsSync(path.join(dir, 'elsewhere')), 'no secrets key made where the daemon never looks');
  t.equal(
    (await cli(['workspace', 'list'], { ...elsewhere, POSTERN_SECRETS_KEY: 'a'.repeat(64) })).code,
    0,
    'a configured secrets.key needs no data directory',
  );
});

t.test('the binary, run from a directory without data/', async (t) => {
  const cwd = t.testdir({});
  const r = await runBin(['workspace', 'list'], { cwd });
  t.equal(r.code, 2);
  t.equal(
    r.stderr,
    `postern: no database at ${path.join(cwd, 'data', 'postern.sqlite')}: run "postern migrate" to create it, or point this command at the daemon's database (--config, dataDir, databaseUrl)\n`,
  );
  t.notOk(existsSync(path.join(cwd, 'data')));
});

t.test('a PostgreSQL server that cannot be reached is one line, exit 1', async (t) => {
  const dir = t.testdir({});
  const env = { POSTERN_DATA_DIR: dir, POSTERN_DATABASE_URL: 'postgres://postern:hunter2@127.0.0.1:1/postern' };
  for (const argv of [['workspace', 'list'], ['migrate']]) {
    const r = await cli(argv, env);
    t.equal(r.code, 1, argv.join(' '));
    t.match(r.stderr, /^postern: cannot reach PostgreSQL postgres:\/\/postern@127\.0\.0\.1:1\/postern: .*ECONNREFUSED.*\n$/);
    t.notMatch(r.stderr, /hunter2/, 'never the password');
  }
  t.same(readdirSync(dir), []);
});

// On PostgreSQL runs only, as every storage test (testDatabases): CI always has one.
if (testDatabases().includes('postgres')) {
  t.test('PostgreSQL: the database must exist, and hold the migrations', async (t) => {
    const dir = t.testdir({});
    const missing = new URL(process.env.POSTERN_TEST_DATABASE_URL!);
    missing.pathname = '/postern_missing_database';
    for (const argv of [['workspace', 'list'], ['migrate']]) {
      const r = await cli(argv, { POSTERN_DATA_DIR: dir, POSTERN_DATABASE_URL: missing.toString() });
      t.equal(r.code, 2, argv.join(' '));
      t.match(
        r.stderr,
        /^postern: PostgreSQL .*\/postern_missing_database does not exist: create it \(createdb postern_missing_database\), then run "postern migrate"\n$/,
      );
    }
    const served = await runBin(['serve'], {
      env: {
        POSTERN_DATA_DIR: dir,
        POSTERN_DATABASE_URL: missing.toString(),
        POSTERN_HTTP_PORT: '0',
        POSTERN_SMTP_PORT: '0',
        POSTERN_SMTP_HOST: '127.0.0.1',
      },
    });
    t.equal(served.code, 2, 'serve too, in one line');
    t.match(served.stderr, /^postern: PostgreSQL .* does not exist: create it .*\n$/);

    const pg = await freshPostgres();
    t.teardown(pg.drop);
    const env = { POSTERN_DATA_DIR: dir, POSTERN_DATABASE_URL: pg.url, POSTERN_LOG_LEVEL: 'info' };
    const empty = await cli(['workspace', 'list'], env);
    t.equal(empty.code, 2);
    t.match(empty.stderr, /^postern: the database PostgreSQL .* is empty \(no migration applied\): run "postern migrate"/);
    t.equal((await cli(['migrate'], env)).code, 0);
    const list = await cli(['workspace', 'list'], env);
    t.equal(list.code, 0, list.stderr);
    t.match(list.stderr, /^postern: database PostgreSQL postgres:\/\/\S+\n/);
    t.ok(list.stderr.includes(`/${pg.name}`), 'names the database');
  });
}
