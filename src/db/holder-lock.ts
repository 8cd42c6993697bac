// Who holds an embedded database: every process that opens it (the daemon for its lifetime, a CLI
// command for its run) holds a shared lock on `<database>.lock`, and `postern restore` needs the
// exclusive one, so it cannot rename a file over a database a running daemon writes to (mail
// accepted afterwards would be gone at the next start). The lock is SQLite's own, on a file of its
// own: a read transaction held open keeps a POSIX shared lock, which the kernel drops when the
// process ends however it ends, so a daemon killed with SIGKILL leaves no stale lock behind (unlike
// a pid file, there is nothing to check or clean up). The database's own locks cannot serve: in WAL
// mode readers and writers never block each other, and restore replaces the file itself.
import { closeSync, openSync } from 'node:fs';
import SQLite from 'better-sqlite3';

/** The lock file beside a database file. */
const lockFileOf = (databaseFile: string) => `${databaseFile}.lock`;

export interface HeldLock {
  release(): void;
}

/** Thrown when the lock is held the other way (a restore running, or a process using the database). */
export class LockBusyError extends Error {
  readonly code = 'lock_busy';
}

function openLock(file: string): SQLite.Database {
  // Created 0600 whatever the umask: it sits among the database's own files.
  closeSync(openSync(file, 'a', 0o600));
  const db = new SQLite(file);
  // Never wait: a held lock is an answer, not a reason to block.
  db.pragma('busy_timeout = 0');
  return db;
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/**
 * Takes the shared lock for as long as the database is open. Any number of processes hold it at
 * once; it fails (LockBusyError) only while a restore holds the exclusive one.
 */
export function holdShared(databaseFile: string): HeldLock {
  const file = lockFileOf(databaseFile);
  const db = openLock(file);
  try {
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (err) {
    db.close();
    if (isBusy(err)) throw new LockBusyError(`${file} is locked by a restore (postern restore) in progress`);
    throw err;
  }
  return { release: () => db.close() };
}

/**
 * Takes the exclusive lock (a restore). Fails (LockBusyError) while any process holds the shared
 * one: a daemon, or a command, using the database.
 */
export function holdExclusive(databaseFile: string): HeldLock {
  const file = lockFileOf(databaseFile);
  const db = openLock(file);
  try {
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if (isBusy(err)) throw new LockBusyError(`${file} is held by a process using the database`);
    throw err;
  }
  return { release: () => db.close() };
}
