// Durable SQLite commits without an fsync on the event loop.
//
// With synchronous=FULL SQLite fsyncs the WAL inside COMMIT, and better-sqlite3 runs COMMIT on
// the event loop's thread: every group commit stopped the loop for one fsync (a seventh of a busy
// daemon's loop in `npm run bench delivery`), in which it could neither accept nor deliver. Here
// the connection runs synchronous=NORMAL, so COMMIT only writes the WAL, and a commit's caller is
// answered once an fdatasync of the WAL file, run on libuv's thread pool, has finished after it.
// That is FULL's promise kept another way: nothing is answered (no 202, no 250, no 201) before
// its commit is on disk. Meanwhile the loop accepts and commits the next batch, whose sync
// follows the one in flight, so one fsync serves every commit made while the previous one ran.
//
// Why this is as safe as FULL: in WAL mode a commit is frames appended to the WAL (the header
// with them when the WAL restarts), and a frame is part of the database once it and its commit
// frame are on disk with valid checksums. SQLite itself, with NORMAL, syncs the WAL before a
// checkpoint copies it into the database and the database before the WAL restarts, so a sync
// of ours never races a restart of frames already answered. Readers may see a commit before its
// sync ends: the dispatcher can claim an accepted message before the client has its 202; a power
// loss in that instant loses the message unanswered (the client retries) and its delivery is not
// recorded (the dispatcher delivers again: at least once, as always).
//
// fsync flushes a file's dirty pages whichever descriptor wrote them (Linux, and every POSIX
// system where fsync flushes at all), so our own descriptor on the WAL serves. It is opened once:
// SQLite removes a WAL only when the last connection to the database closes, and ours is open
// until the daemon stops (opening it for each sync cost two more trips through the thread pool per
// commit, which sessions waiting one message at a time felt). Only a database whose journal really
// is the WAL commits this way (database.ts keeps FULL otherwise).
import { open, type FileHandle } from 'node:fs/promises';
import {
  SqliteDialect,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDialectConfig,
  type TransactionSettings,
} from 'kysely';

export interface WalSync {
  /** Call after a statement ran outside a transaction or ended one (the connection has a commit to sync). */
  committed(): void;
  /** Resolves once everything committed before the call is on disk. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** `datasync` is the call that makes the WAL durable (a test may observe it). */
export function createWalSync(walFile: string, datasync: (wal: FileHandle) => Promise<void> = (wal) => wal.datasync()): WalSync {
  let dirty = false;
  let handle: FileHandle | null = null;
  let running: Promise<void> | null = null;
  let next: Promise<void> | null = null;

  async function syncOnce(): Promise<void> {
    handle ??= await open(walFile, 'r');
    await datasync(handle);
  }
  function start(): Promise<void> {
    running = syncOnce().finally(() => (running = null));
    return running;
  }
  return {
    committed() {
      dirty = true;
    },
    flush() {
      if (!dirty) return Promise.resolve();
      dirty = false;
      if (!running) return start();
      // A sync is in flight and may have begun before this commit: one more after it serves every
      // commit that arrives meanwhile.
      next ??= running.then(
        () => ((next = null), start()),
        () => ((next = null), start()),
      );
      return next;
    },
    async close() {
      await running?.catch(() => {});
      await next?.catch(() => {});
      await handle?.close();
      handle = null;
    },
  };
}

/**
 * SQLite's Kysely dialect whose queries and transactions answer only once their commits are
 * synced. `inTransaction` is the database's own flag (better-sqlite3's `inTransaction`).
 */
export class SyncedSqliteDialect extends SqliteDialect {
  constructor(
    config: SqliteDialectConfig,
    private readonly sync: { wal: WalSync; inTransaction: () => boolean },
  ) {
    super(config);
  }

  override createDriver(): Driver {
    return new SyncedDriver(super.createDriver(), this.sync.wal, this.sync.inTransaction);
  }
}

// Marks the WAL as having a commit to sync after a statement that changed something outside a
// transaction: an autocommitted write, COMMIT, or the RELEASE of an outermost savepoint.
class MarkingConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly wal: WalSync,
    private readonly inTransaction: () => boolean,
  ) {}
  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.inner.executeQuery<R>(query);
    if (result.numAffectedRows !== undefined && !this.inTransaction() && query.sql !== 'rollback') this.wal.committed();
    return result;
  }
  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

// Kysely releases a connection after the last statement of a query or a transaction and awaits the
// release before answering: waiting for the sync there answers after it without holding the one
// connection while the disk works (reads and the next batch go on meanwhile).
class SyncedDriver implements Driver {
  private connection: MarkingConnection | null = null;
  constructor(
    private readonly inner: Driver,
    private readonly wal: WalSync,
    private readonly inTransaction: () => boolean,
  ) {}
  init(): Promise<void> {
    return this.inner.init();
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    // SQLite's driver has one connection: wrap it once.
    const c = await this.inner.acquireConnection();
    if (this.connection?.inner !== c) this.connection = new MarkingConnection(c, this.wal, this.inTransaction);
    return this.connection;
  }
  beginTransaction(c: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(c, settings);
  }
  commitTransaction(c: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(c);
  }
  rollbackTransaction(c: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(c);
  }
  savepoint: Driver['savepoint'] = (...args) => this.inner.savepoint!(...args);
  rollbackToSavepoint: Driver['rollbackToSavepoint'] = (...args) => this.inner.rollbackToSavepoint!(...args);
  releaseSavepoint: Driver['releaseSavepoint'] = (...args) => this.inner.releaseSavepoint!(...args);
  async releaseConnection(c: DatabaseConnection): Promise<void> {
    // Taken before the connection is free again, so the next holder's commits are not mistaken for ours.
    const synced = this.wal.flush();
    await this.inner.releaseConnection((c as MarkingConnection).inner);
    await synced;
  }
  async destroy(): Promise<void> {
    await this.wal.close();
    await this.inner.destroy();
  }
}
