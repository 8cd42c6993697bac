// The database a command acts on. serve and migrate create and migrate it; every other command
// opens the one that exists and refuses one that does not, or that holds no migration: that means
// the command was pointed somewhere else than the daemon (another working directory, another
// --config), and writing there would leave the change where the daemon never looks. Failures to
// open are said in one line: exit 2 for what the operator must fix, 1 for a server to try again.
import { existsSync, statSync } from 'node:fs';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle, type DatabaseTarget } from '../db/database.js';
import { CommandFailure } from './command.js';

const MIGRATE_FIRST = `run "postern migrate" to create it, or point this command at the daemon's database (--config, dataDir, databaseUrl)`;

/** The database as a person reads it: the SQLite file, or the PostgreSQL URL without its password. */
export function describeDatabase(target: DatabaseTarget): string {
  if (target.dialect === 'sqlite') return `SQLite ${target.file}`;
  try {
    const url = new URL(target.url);
    url.password = '';
    return `PostgreSQL ${url.toString()}`;
  } catch {
    return 'PostgreSQL (databaseUrl)';
  }
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET']);

/** A known failure to open or migrate the database as one line with its exit code; null otherwise. */
export function databaseFailure(err: unknown, target: DatabaseTarget): CommandFailure | null {
  if (err instanceof CommandFailure) return err;
  const { code = '', message = '' } = (err ?? {}) as { code?: string; message?: string };
  const where = describeDatabase(target);
  const detail = message || code;
  if (target.dialect === 'postgres') {
    const name = (() => {
      try {
        return decodeURIComponent(new URL(target.url).pathname.slice(1));
      } catch {
        return '';
      }
    })();
    if (code === '3D000') return new CommandFailure(`${where} does not exist: create it (createdb ${name}), then run "postern migrate"`);
    if (code === '28P01' || code === '28000') return new CommandFailure(`cannot log in to ${where}: ${detail}`);
    if (UNREACHABLE.has(code)) return new CommandFailure(`cannot reach ${where}: ${detail}`, 1);
    return null;
  }
  if (code === 'lock_busy') return new CommandFailure(`cannot open ${where}: ${detail}; wait for it to finish`);
  if (code === 'SQLITE_NOTADB') return new CommandFailure(`${target.file} is not a SQLite database (dataDir, databaseUrl)`);
  if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY' || code === 'SQLITE_PERM') {
    return new CommandFailure(`cannot open ${where} for writing: ${detail}`);
  }
  return null;
}

async function hasMigrations(handle: DatabaseHandle): Promise<boolean> {
  const tables = await handle.db.introspection.getTables({ withInternalKyselyTables: true });
  if (!tables.some((table) => table.name === 'kysely_migration')) return false;
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from kysely_migration`.execute(handle.db);
  return Number(rows[0]?.n ?? 0) > 0;
}

/** Opens the database the configuration names for a management command; never creates one. */
export async function openExistingDatabase(target: DatabaseTarget): Promise<DatabaseHandle> {
  const empty = new CommandFailure(`the database ${describeDatabase(target)} is empty (no migration applied): ${MIGRATE_FIRST}`);
  if (target.dialect === 'sqlite') {
    if (!existsSync(target.file)) throw new CommandFailure(`no database at ${target.file}: ${MIGRATE_FIRST}`);
    // Opening an empty file would make it a database (and add its journal files beside it).
    if (statSync(target.file).isFile() && statSync(target.file).size === 0) throw empty;
  }
  let handle: DatabaseHandle | null = null;
  try {
    handle = openDatabase(target);
    if (!(await hasMigrations(handle))) throw empty;
    return handle;
  } catch (err) {
    await handle?.close().catch(() => undefined);
    throw databaseFailure(err, target) ?? err;
  }
}
