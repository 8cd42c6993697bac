// Which databases a storage/API test runs on: SQLite always, PostgreSQL too when
// POSTERN_TEST_DATABASE_URL names a server (each boot gets a fresh database, dropped afterwards).
//
// Names a run shares with the machine come from the environment, so two runs on one machine never
// meet: every database the tests create is named POSTERN_TEST_DB_PREFIX (default `postern_t_`)
// and twelve hex digits, and every test that uses Redis takes POSTERN_TEST_REDIS_URL (default
// redis://127.0.0.1:6379, database 0). `.ci/run` gives each run a prefix and a Redis database of
// its own (docs/testing.md). The suffix's fixed length is what keeps prefixes apart: a name of
// `postern_t_` is never a name of `postern_t_123_`, although one prefix starts the other.
import { randomBytes } from 'node:crypto';
import t from 'tap';

// `pg` is loaded when a database is made, not with this file: a SQLite-only test that imports
// `sqliteOnly` (test/idle-memory.test.ts counts what its process loaded) must not load it.
const pgClient = async (connectionString: string) => new (await import('pg')).default.Client({ connectionString });

export type TestDb = 'sqlite' | 'postgres';

const DEFAULT_PREFIX = 'postern_t_';
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
/** Random bytes after the prefix: 12 hex digits. */
const SUFFIX_BYTES = 6;
// Unquoted identifiers only (PostgreSQL folds them to lower case), and room for the suffix within
// PostgreSQL's 63 bytes.
const PREFIX_PATTERN = /^[a-z_][a-z0-9_]{0,50}$/;

let reported = false;

/**
 * The databases to run a file's storage tests on. Without a PostgreSQL server the PostgreSQL leg
 * is reported as one skipped test with the reason, so its absence shows in every run's summary
 * instead of the file silently running half its cases.
 */
export function testDatabases(): TestDb[] {
  if (process.env.POSTERN_TEST_DATABASE_URL) return ['sqlite', 'postgres'];
  if (!reported) {
    reported = true;
    t.test('the PostgreSQL leg of this file', { skip: 'POSTERN_TEST_DATABASE_URL is not set (see docs/testing.md)' }, () => {});
  }
  return ['sqlite'];
}

/** The prefix of the databases this run creates: POSTERN_TEST_DB_PREFIX, or `postern_t_`. */
export function testDatabasePrefix(env: NodeJS.ProcessEnv = process.env): string {
  const prefix = env.POSTERN_TEST_DB_PREFIX || DEFAULT_PREFIX;
  if (!PREFIX_PATTERN.test(prefix)) {
    throw new Error(`POSTERN_TEST_DB_PREFIX must be 1-51 of a-z, 0-9 and _, not starting with a digit (got ${JSON.stringify(prefix)})`);
  }
  return prefix;
}

/** A new database name of the prefix's: the prefix and 12 random hex digits. */
export function testDatabaseName(prefix: string = testDatabasePrefix()): string {
  return `${prefix}${randomBytes(SUFFIX_BYTES).toString('hex')}`;
}

/** Whether `name` is one `testDatabaseName(prefix)` could have given. */
export function isTestDatabaseOf(prefix: string, name: string): boolean {
  return name.length === prefix.length + SUFFIX_BYTES * 2 && name.startsWith(prefix) && /^[0-9a-f]+$/.test(name.slice(prefix.length));
}

/** The databases of a prefix on the server `admin` names (those left behind, or in use now). */
export async function testDatabasesOf(admin: string, prefix: string = testDatabasePrefix()): Promise<string[]> {
  const client = await pgClient(admin);
  await client.connect();
  try {
    const r = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname', [
      prefix,
    ]);
    return r.rows.map((row) => row.datname).filter((name) => isTestDatabaseOf(prefix, name));
  } finally {
    await client.end();
  }
}

/** The Redis a test keeps its budgets in: POSTERN_TEST_REDIS_URL, or database 0 on 127.0.0.1:6379. */
export function testRedisUrl(env: NodeJS.ProcessEnv = process.env): string {
  const url = env.POSTERN_TEST_REDIS_URL || DEFAULT_REDIS_URL;
  let protocol = '';
  try {
    protocol = new URL(url).protocol;
  } catch {
    // not a URL: refused below
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    throw new Error(`POSTERN_TEST_REDIS_URL must be a redis:// or rediss:// URL (got ${JSON.stringify(url)})`);
  }
  return url;
}

/**
 * Creates an empty PostgreSQL database named by the run's prefix, on the server `admin` names
 * (POSTERN_TEST_DATABASE_URL unless given); returns its name, its URL and a function that drops it.
 */
export async function freshPostgres(
  opts: { admin?: string; prefix?: string } = {},
): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const admin = opts.admin ?? process.env.POSTERN_TEST_DATABASE_URL;
  if (!admin) throw new Error('POSTERN_TEST_DATABASE_URL is not set');
  const name = testDatabaseName(opts.prefix ?? testDatabasePrefix());
  const client = await pgClient(admin);
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const c = await pgClient(admin);
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * Declares that this file boots a daemon on SQLite only, and why: the PostgreSQL leg is reported
 * as one skipped test carrying the reason, so every run shows what it did not test. The call is
 * also the marker `test/pg-leg.test.ts` looks for; the reason must say why, not "later".
 */
export function sqliteOnly(reason: string): void {
  if (!reason.trim()) throw new Error('sqliteOnly() needs a reason');
  t.test('the PostgreSQL leg of this file', { skip: `SQLite only: ${reason}` }, () => {});
}

/**
 * For a test that spawns the binary: the environment that puts it on `db` (a fresh PostgreSQL
 * database, dropped at teardown; nothing for SQLite, which lives in the data directory).
 */
export async function databaseEnv(t: { teardown(fn: () => unknown): void }, db: TestDb): Promise<Record<string, string>> {
  if (db === 'sqlite') return {};
  const fresh = await freshPostgres();
  t.teardown(() => fresh.drop());
  return { POSTERN_DATABASE_URL: fresh.url };
}
