// Which databases a storage/API test runs on: SQLite always, PostgreSQL too when
// POSTERN_TEST_DATABASE_URL names a server (each boot gets a fresh database, dropped afterwards).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import t from 'tap';

export type TestDb = 'sqlite' | 'postgres';

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

/** Creates an empty PostgreSQL database; returns its URL and a function that drops it. */
export async function freshPostgres(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = process.env.POSTERN_TEST_DATABASE_URL;
  if (!admin) throw new Error('POSTERN_TEST_DATABASE_URL is not set');
  const name = `postern_t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin });
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
