// A database that cannot be opened or migrated, said in one line with the exit code the process
// ends with: 2 for what the operator must fix (a database that does not exist, a wrong password, a
// file that is not SQLite), 1 for a server to try again (unreachable). The daemon's start and the
// commands say it alike.
import { ExitFailure } from '../lib/exit-failure.js';
import type { DatabaseTarget } from './database.js';

/** A known failure to open or migrate the database: its one line, and the exit code. */
class DatabaseFailure extends ExitFailure {}

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
export function databaseFailure(err: unknown, target: DatabaseTarget): DatabaseFailure | null {
  if (err instanceof DatabaseFailure) return err;
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
    if (code === '3D000') return new DatabaseFailure(`${where} does not exist: create it (createdb ${name}), then run "postern migrate"`);
    if (code === '28P01' || code === '28000') return new DatabaseFailure(`cannot log in to ${where}: ${detail}`);
    if (UNREACHABLE.has(code)) return new DatabaseFailure(`cannot reach ${where}: ${detail}`, 1);
    return null;
  }
  if (code === 'lock_busy') return new DatabaseFailure(`cannot open ${where}: ${detail}; wait for it to finish`);
  if (code === 'SQLITE_NOTADB') return new DatabaseFailure(`${target.file} is not a SQLite database (dataDir, databaseUrl)`);
  if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY' || code === 'SQLITE_PERM') {
    return new DatabaseFailure(`cannot open ${where} for writing: ${detail}`);
  }
  return null;
}
