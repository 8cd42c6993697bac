// Group commit for SQLite. With synchronous=FULL every commit is an fsync of the WAL, and SQLite has
// one writer, so committing each accept and each dispatcher step on its own makes the disk the
// limit. Writes that arrive while a commit is in progress wait and are then committed together in
// one transaction, each inside its own SAVEPOINT so a failing write (quota, idempotent repeat)
// rolls back alone. Every caller still resolves only after the COMMIT that holds its write, so
// durability is exactly that of a transaction per write. PostgreSQL has concurrent writers and no
// single-writer queue: there each write is simply its own transaction.
//
// Commit window (`dispatcher.commitWindowMs`): better-sqlite3 runs the COMMIT, and so its fsync, on
// the event loop's thread, ~2-3 ms each on ordinary disks. Flushing on every loop turn made a busy
// daemon spend a fifth of its time in fsync with ~7 writes per commit. So commits start at most
// once per window: a write that arrives when the last commit is older than the window is flushed
// on the next turn (no added latency when idle); under load the writes of one window share one
// fsync. Nothing is acknowledged before its COMMIT, so a 202 still means committed.
import { CompiledQuery, type Transaction } from 'kysely';
import type { Db, Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';

export type Write<T> = (trx: Transaction<Database>) => Promise<T>;

export interface WriteBatcher {
  run<T>(write: Write<T>): Promise<T>;
}

interface Pending {
  write: Write<unknown>;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

const MAX_BATCH = 256;

// Compiled once: three of these run per write, and building a sql`` query each time cost more
// than SQLite running it.
const SAVEPOINT = CompiledQuery.raw('SAVEPOINT w');
const RELEASE = CompiledQuery.raw('RELEASE w');
const ROLLBACK_TO = CompiledQuery.raw('ROLLBACK TO w');

export function createWriteBatcher(db: Db, dialect: Dialect, opts: { windowMs?: number } = {}): WriteBatcher {
  if (dialect === 'postgres') return { run: (write) => db.transaction().execute(write) };
  const windowMs = opts.windowMs ?? 0;
  let queue: Pending[] = [];
  let flushing = false;
  let timer: NodeJS.Timeout | null = null;
  let lastCommitAt = -Infinity;

  async function flush(): Promise<void> {
    flushing = true;
    timer = null;
    while (queue.length) {
      lastCommitAt = performance.now();
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      try {
        await db.transaction().execute(async (trx) => {
          for (const p of batch) {
            await trx.executeQuery(SAVEPOINT);
            try {
              outcomes.push({ ok: true, value: await p.write(trx) });
              await trx.executeQuery(RELEASE);
            } catch (error) {
              await trx.executeQuery(ROLLBACK_TO);
              await trx.executeQuery(RELEASE);
              outcomes.push({ ok: false, error });
            }
          }
        });
      } catch (error) {
        for (const p of batch) p.reject(error);
        continue;
      }
      batch.forEach((p, i) => {
        const o = outcomes[i];
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
    }
    flushing = false;
  }

  return {
    run<T>(write: Write<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ write, resolve: resolve as (v: unknown) => void, reject });
        if (flushing && timer && queue.length >= MAX_BATCH) {
          // A full batch need not wait for the rest of the window.
          clearTimeout(timer);
          timer = null;
          setImmediate(() => void flush());
        } else if (!flushing) {
          // Yield at least one turn of the event loop first, so writes of requests already read
          // off their sockets join this commit instead of each paying for its own; under load,
          // wait for the rest of the commit window.
          flushing = true;
          const wait = lastCommitAt + windowMs - performance.now();
          if (wait >= 1) timer = setTimeout(() => void flush(), wait);
          else setImmediate(() => void flush());
        }
      });
    },
  };
}
