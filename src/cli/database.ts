// The database a command acts on. serve and migrate create and migrate it; every other command
// opens the one that exists and refuses one that does not, or that holds no migration: that means
// the command was pointed somewhere else than the daemon (another working directory, another
// --config), and writing there would leave the change where the daemon never looks. Failures to
// open are said in one line (db/open-failure.ts).
import { existsSync, statSync } from 'node:fs';
import { sql } from 'kysely';
import { databaseFailure, type DatabaseHandle, type DatabaseTarget, describeDatabase, openDatabase } from '../db/index.js';
import { CommandFailure } from './command.js';

const MIGRATE_FIRST = `run "postern migrate" to create it, or point this command at the daemon's database (--config, dataDir, databaseUrl)`;

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
