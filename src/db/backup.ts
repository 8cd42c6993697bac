// Backups of an embedded (SQLite) database: a consistent copy made while the daemon runs, through
// SQLite's online backup API (pages copied while writers go on; the copy is one moment of the
// database, raw mail included), with the data directory's files the database cannot be used
// without (the key that seals provider credentials and DKIM keys) carried inside the copy, so a
// backup is one file. Restoring puts them back; it never overwrites a database that holds data unless forced.
// A backup therefore holds every secret the daemon has: it is written 0600 whatever the umask,
// and sealed with a passphrase on request (backup-envelope.ts).
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { EnvelopeError, isSealedBackup, openBackup, sealBackup } from './backup-envelope.js';
import { privateDirectory } from '../lib/private-dir.js';
import { holdExclusive, LockBusyError, type HeldLock } from './holder-lock.js';

/** Files of the data directory a backup carries (when they exist). */
const CARRIED_FILES = ['secrets.key'];

const TABLE = 'postern_backup';

export interface BackupResult {
  file: string;
  bytes: number;
  messages: number;
  receivedMessages: number;
  carried: string[];
  /** Sealed with a passphrase (backup-envelope.ts). */
  encrypted: boolean;
}

/** An empty file only this user can read, for SQLite to fill (it keeps an existing file's mode). */
function privateFile(file: string): void {
  rmSync(file, { force: true });
  closeSync(openSync(file, 'wx', 0o600));
  chmodSync(file, 0o600);
}

/**
 * Copies the database at `source` and the carried files of `dataDir` into `dest` (0600), sealed
 * with `passphrase` when one is given.
 */
export async function backupSqlite(source: string, dataDir: string, dest: string, passphrase?: string): Promise<BackupResult> {
  if (!existsSync(source)) throw new Error(`no database at ${source}`);
  const tmp = `${dest}.partial`;
  privateFile(tmp);
  try {
    const result = await copyDatabase(source, dataDir, tmp);
    if (passphrase !== undefined) {
      const sealed = `${dest}.sealing`;
      privateFile(sealed);
      try {
        await sealBackup(tmp, sealed, passphrase);
        renameSync(sealed, dest);
      } finally {
        rmSync(sealed, { force: true });
      }
    } else {
      renameSync(tmp, dest);
    }
    return { file: dest, bytes: statSync(dest).size, ...result, encrypted: passphrase !== undefined };
  } finally {
    rmSync(tmp, { force: true });
  }
}

async function copyDatabase(
  source: string,
  dataDir: string,
  tmp: string,
): Promise<{ messages: number; receivedMessages: number; carried: string[] }> {
  const db = new SQLite(source, { readonly: true, fileMustExist: true });
  try {
    await db.backup(tmp);
  } finally {
    db.close();
  }
  const copy = new SQLite(tmp);
  const carried: string[] = [];
  let messages = 0;
  let receivedMessages = 0;
  try {
    copy.exec(`CREATE TABLE ${TABLE} (name TEXT PRIMARY KEY, content BLOB NOT NULL)`);
    const put = copy.prepare(`INSERT INTO ${TABLE} (name, content) VALUES (?, ?)`);
    put.run('created_at', Buffer.from(new Date().toISOString()));
    for (const name of CARRIED_FILES) {
      const file = path.join(dataDir, name);
      if (!existsSync(file)) continue;
      put.run(`file:${name}`, readFileSync(file));
      carried.push(name);
    }
    messages = Number((copy.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n);
    receivedMessages = Number((copy.prepare('SELECT count(*) AS n FROM received_messages').get() as { n: number }).n);
    copy.pragma('journal_mode = DELETE');
  } finally {
    copy.close();
  }
  return { messages, receivedMessages, carried };
}

/** Whether a database file holds any workspace (a fresh one made by `migrate` does not). */
function holdsData(file: string): boolean {
  if (!existsSync(file)) return false;
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'workspaces'").get();
    if (!table) return false;
    return Boolean(db.prepare('SELECT 1 FROM workspaces LIMIT 1').get());
  } finally {
    db.close();
  }
}

export interface RestoreResult {
  file: string;
  messages: number;
  receivedMessages: number;
  restored: string[];
}

/** The processes the database's node list names (what a refused restore tells the operator to stop). */
function registeredNodes(file: string): string {
  if (!existsSync(file)) return '';
  try {
    const db = new SQLite(file, { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT host, pid FROM nodes ORDER BY started_at').all() as { host: string; pid: number }[];
      return rows.length ? ` (registered: ${rows.map((r) => `pid ${r.pid} on ${r.host}`).join(', ')})` : '';
    } finally {
      db.close();
    }
  } catch {
    return '';
  }
}

/**
 * Holds the database against every other process for the length of a restore. Refused, whatever
 * `--force` says, while a daemon or a command has it open: replacing the file under a running
 * daemon loses what it accepts afterwards.
 */
function lockForRestore(target: string): HeldLock {
  try {
    return holdExclusive(target);
  } catch (err) {
    if (!(err instanceof LockBusyError)) throw err;
    throw new Error(
      `the database ${target} is in use by a running Postern${registeredNodes(target)}: ` +
        'stop the daemon (and any postern command) first, then restore; --force does not override this',
    );
  }
}

/**
 * Restores a backup over the database at `target` (refused when it holds data, unless `force`),
 * and the files it carries into `dataDir` (refused when one exists with other content, unless
 * `force`). Refused while any process has the database open (holder-lock.ts).
 */
export async function restoreSqlite(
  backup: string,
  target: string,
  dataDir: string,
  opts: { force: boolean; passphrase?: string },
): Promise<RestoreResult> {
  if (!existsSync(backup)) throw new Error(`no backup at ${backup}`);
  const sealed = isSealedBackup(backup);
  if (sealed && opts.passphrase === undefined) {
    throw new Error(`${backup} is encrypted: give its passphrase with --passphrase-file FILE or POSTERN_BACKUP_PASSPHRASE`);
  }
  privateDirectory(path.dirname(target));
  privateDirectory(dataDir);
  const lock = lockForRestore(target);
  const tmp = `${target}.restoring`;
  try {
    privateFile(tmp);
    if (sealed) await openBackup(backup, tmp, opts.passphrase!);
    else copyFileSync(backup, tmp);
    chmodSync(tmp, 0o600);
    return restoreCopy(backup, tmp, target, dataDir, opts.force);
  } catch (err) {
    rmSync(tmp, { force: true });
    if (err instanceof EnvelopeError) throw new Error(err.message);
    throw err;
  } finally {
    lock.release();
  }
}

/** Puts the plain copy `tmp` of `backup` in place of `target` (the restore lock held). */
function restoreCopy(backup: string, tmp: string, target: string, dataDir: string, force: boolean): RestoreResult {
  const db = new SQLite(tmp);
  const files: { name: string; content: Buffer }[] = [];
  let messages = 0;
  let receivedMessages = 0;
  try {
    const marked = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = '${TABLE}'`).get();
    if (!marked) throw new Error(`${backup} is not a Postern backup (made by postern backup)`);
    for (const row of db.prepare(`SELECT name, content FROM ${TABLE} WHERE name LIKE 'file:%'`).all() as {
      name: string;
      content: Buffer;
    }[]) {
      files.push({ name: row.name.slice('file:'.length), content: row.content });
    }
    db.exec(`DROP TABLE ${TABLE}`);
    messages = Number((db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n);
    receivedMessages = Number((db.prepare('SELECT count(*) AS n FROM received_messages').get() as { n: number }).n);
  } catch (err) {
    db.close();
    rmSync(tmp, { force: true });
    throw err;
  }
  db.close();
  const refuse = (why: string) => {
    rmSync(tmp, { force: true });
    throw new Error(`${why}; add --force to replace it`);
  };
  if (!force && holdsData(target)) refuse(`the database at ${target} holds data`);
  for (const f of files) {
    const file = path.join(dataDir, f.name);
    if (!force && existsSync(file) && !readFileSync(file).equals(f.content)) refuse(`${file} exists with another content`);
  }
  for (const suffix of ['-wal', '-shm']) rmSync(`${target}${suffix}`, { force: true });
  renameSync(tmp, target);
  for (const f of files) writeFileSync(path.join(dataDir, f.name), f.content, { mode: 0o600 });
  return { file: target, messages, receivedMessages, restored: files.map((f) => f.name) };
}
