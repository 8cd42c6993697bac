// The one Kysely instance. Dialect-specific choices live here and nowhere else: SQLite pragmas,
// the PostgreSQL pool, and the few SQL fragments that differ between the two.
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import type pg from 'pg';
import { lazyRequire } from '../lib/lazy.js';
import { privateDirectory } from '../lib/private-dir.js';
import { holdShared } from './holder-lock.js';
import { Kysely, PostgresDialect, SqliteDialect, sql, type RawBuilder, type SqliteDatabase } from 'kysely';
import type { Database } from './schema.js';
import { createCheckpointer, type Checkpointer } from './wal-checkpoint.js';
import { createWalSync, SyncedSqliteDialect, type WalSync } from './wal-sync.js';

export type Db = Kysely<Database>;
export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Db;
  dialect: Dialect;
  /** The PostgreSQL URL (budgets keep their own small pool on it); absent on SQLite. */
  url?: string;
  /** Checkpoints the WAL (SQLite) and closes every connection. */
  close(): Promise<void>;
}

export type DatabaseTarget = { dialect: 'sqlite'; file: string } | { dialect: 'postgres'; url: string };

/**
 * Opens the database. On SQLite the process holds the shared holder lock while it is open
 * (holder-lock.ts), unless `sharedLock` is false: the caller then holds the exclusive one.
 * `checkpointThread` (the daemon): SQLite's WAL checkpoints run on a thread of their own.
 */
export function openDatabase(
  target: DatabaseTarget,
  opts: { sharedLock?: boolean; checkpointThread?: boolean; onCheckpointLost?: (err: unknown) => void } = {},
): DatabaseHandle {
  if (target.dialect === 'postgres') {
    const pg = pgLib();
    // COUNT(*) and BIGINT come back as strings by default; our counts fit in a JS number.
    pg.types.setTypeParser(20, (v: string) => Number(v));
    // A connection attempt to a server that does not answer (a partition, a host gone) gives up
    // after 5 s instead of waiting for TCP: the request gets 503 rather than hanging.
    const pool = new pg.Pool({
      connectionString: target.url,
      max: 10,
      Client: preparingClient(),
      connectionTimeoutMillis: 5000,
      keepAlive: true,
    });
    // A client that loses its connection (server restart, failover: 57P01) emits 'error'; unhandled,
    // that crashes the daemon. An idle client emits it on the pool, a checked-out one on itself
    // (the query it runs fails with the same error, which its caller handles). The pool drops a
    // broken client when it is released and connects a new one on next use.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', url: target.url, close: () => db.destroy() };
  }
  privateDirectory(path.dirname(target.file));
  // Held while the database is open, so `postern restore` cannot replace it under this process.
  const lock = opts.sharedLock === false ? { release: () => {} } : holdShared(target.file);
  let sqlite: SQLite.Database;
  try {
    privateFiles(target.file);
    sqlite = new SQLite(target.file);
  } catch (err) {
    lock.release();
    throw err;
  }
  // WAL lets the CLI and the daemon use the file at once. Every commit is on disk before its caller
  // is answered, so a 202 or a 250 survives power loss, not only a crash of the process: SQLite
  // writes the WAL (synchronous=NORMAL) and wal-sync.ts fsyncs it off the event loop.
  // A file system that cannot hold a WAL leaves the journal as it was: SQLite then fsyncs in COMMIT.
  const walMode = sqlite.pragma('journal_mode = WAL', { simple: true }) === 'wal';
  sqlite.pragma(walMode ? 'synchronous = NORMAL' : 'synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const database = cachingStatements(sqlite);
  // The daemon checkpoints from a thread (wal-checkpoint.ts); a CLI command lets SQLite do it.
  const checkpointer = walMode && opts.checkpointThread ? createCheckpointer(target.file, sqlite, { onLost: opts.onCheckpointLost }) : null;
  const wal = walMode ? createWalSync(`${target.file}-wal`) : null;
  const db = new Kysely<Database>({
    dialect: wal
      ? new SyncedSqliteDialect(
          { database },
          { wal: checkpointer ? alsoCheckpointing(wal, checkpointer) : wal, inTransaction: () => sqlite.inTransaction },
        )
      : new SqliteDialect({ database }),
  });
  return {
    db,
    dialect: 'sqlite',
    close: async () => {
      try {
        await checkpointer?.close();
        sqlite.pragma('wal_checkpoint(TRUNCATE)');
        await db.destroy();
      } finally {
        lock.release();
      }
    },
  };
}

// Every commit the sync is told of also tells the checkpointer.
function alsoCheckpointing(wal: WalSync, checkpointer: Checkpointer): WalSync {
  return {
    committed() {
      wal.committed();
      checkpointer.committed();
    },
    flush: () => wal.flush(),
    close: () => wal.close(),
  };
}

// The database holds mail, API key hashes and sealed credentials: 0600 whatever the umask (SQLite
// creates its -wal and -shm files with the database file's mode).
function privateFiles(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if (existsSync(f)) chmodSync(f, 0o600);
    } catch (err) {
      // Another user's database (root's own is opened by its owner): its mode is theirs to set.
      if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    }
  }
}

// PostgreSQL parses and plans an unnamed statement on every run; a named one once per connection.
// The daemon runs the same few dozen statements over and over (the ledger's writes, the claim, the
// accept's insert), so a statement text seen twice gets a name and later runs skip parsing and
// planning (and, after five runs, use the generic plan). Texts are bounded: one that varies (an IN
// list of a different length each time) stops getting names once the table is full. A pooler in
// transaction mode that cannot keep named statements (PgBouncer before 1.21) needs
// `max_prepared_statements` set on it.
const MAX_NAMED = 500;
const named = new Map<string, string | null>();
let names = 0;

function nameOf(text: string): string | undefined {
  const name = named.get(text);
  if (name) return name;
  if (name === null && names < MAX_NAMED) {
    const given = `postern_${++names}`;
    named.set(text, given);
    return given;
  }
  if (named.size < MAX_NAMED * 4) named.set(text, null);
  return undefined;
}

/** pg, loaded only by a daemon on PostgreSQL (lib/lazy.ts). */
export const pgLib = lazyRequire<typeof pg>('pg');

let PreparingClient: typeof pg.Client | null = null;
function preparingClient(): typeof pg.Client {
  PreparingClient ??= class extends pgLib().Client {
    // Kysely calls query(text, values); every other form passes through unchanged.
    override query(...args: unknown[]): never {
      const [text, values] = args;
      if (args.length === 2 && typeof text === 'string' && Array.isArray(values) && values.length > 0) {
        const name = nameOf(text);
        if (name) return super.query({ name, text, values }) as never;
      }
      return (super.query as (...a: unknown[]) => never)(...args);
    }
  };
  return PreparingClient;
}

// Kysely's SQLite driver prepares every query afresh; preparing costs more than running most of
// our statements. Statements are kept by SQL text (bounded): better-sqlite3 runs them synchronously,
// so one statement object is never used by two queries at once. Streaming (iterate) gets its own.
function cachingStatements(sqlite: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(text: string) {
      let stmt = cache.get(text);
      if (!stmt) {
        stmt = sqlite.prepare(text);
        if (cache.size >= 500) cache.delete(cache.keys().next().value as string);
        cache.set(text, stmt);
      }
      const cached = stmt;
      return {
        reader: cached.reader,
        all: (params: ReadonlyArray<unknown>) => cached.all(params),
        run: (params: ReadonlyArray<unknown>) => cached.run(params),
        iterate: (params: ReadonlyArray<unknown>) => sqlite.prepare(text).iterate(params),
      };
    },
  };
}

/** `LIKE` that is case-insensitive on both dialects, with `\` as the escape character. */
export function ilike(dialect: Dialect, column: RawBuilder<unknown> | string, pattern: string): RawBuilder<boolean> {
  const col = typeof column === 'string' ? sql.ref(column) : column;
  return dialect === 'postgres' ? sql<boolean>`${col} ILIKE ${pattern} ESCAPE '\\'` : sql<boolean>`${col} LIKE ${pattern} ESCAPE '\\'`;
}

/**
 * `column IN (values)`. On PostgreSQL `column = ANY($1)` with the list as one array parameter: one
 * statement text whatever the list's length, so it is prepared once (an IN list of each length was
 * a statement of its own, each taking one of the prepared names). SQLite has no arrays.
 */
export function inList(dialect: Dialect, column: string, values: readonly unknown[]): RawBuilder<boolean> {
  return dialect === 'postgres'
    ? sql<boolean>`${sql.ref(column)} = any(${[...values]})`
    : sql<boolean>`${sql.ref(column)} in (${sql.join([...values])})`;
}

/** Escapes `%`, `_` and `\` so a user's text matches literally inside a LIKE pattern. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => '\\' + c);
}

// PostgreSQL's SQLSTATEs for "the server is not there for you now": admin_shutdown,
// crash_shutdown, cannot_connect_now, too_many_connections and the connection exceptions (class 08).
const UNAVAILABLE_STATES = /^(57P0[123]|53300|08\d\d\d|08P01)$/;
// What Node's sockets and pg's own client say when the connection is gone or never came.
const UNAVAILABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection error and is not queryable|Client was closed and is not queryable|timeout exceeded when trying to connect|the database system is (starting up|shutting down|in recovery mode)/i;

/**
 * True when an error says the database cannot be reached now (down, restarting, failing over,
 * out of connections) rather than that the query was wrong:
 * what the HTTP API answers with 503 and SMTP with 421. Follows `cause` and AggregateError.
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (UNAVAILABLE_STATES.test(e.code) || UNAVAILABLE_ERRNOS.has(e.code))) return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x, depth + 1))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}

/** True when a database error is a unique-constraint violation (both drivers). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** True when `column` contains `needle` exactly (case-sensitive, no pattern characters). */
export function containsText(dialect: Dialect, column: string, needle: string): RawBuilder<boolean> {
  return dialect === 'postgres'
    ? sql<boolean>`strpos(${sql.ref(column)}, ${needle}) > 0`
    : sql<boolean>`instr(${sql.ref(column)}, ${needle}) > 0`;
}
