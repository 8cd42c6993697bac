// Group commit for SQLite: with synchronous=FULL every transaction costs one fsync of the WAL, and
// better-sqlite3 blocks the event loop for it. Work that arrives while a commit is in flight is
// queued and committed together in the next transaction, so N concurrent SMTP transactions cost
// one fsync instead of N — each still gets its 250 only after its own rows are durable. If a batch
// fails, its items are retried one transaction each so one bad item cannot sink the others.
// PostgreSQL has a pool and its own group commit; there each item is its own transaction.
import type { Transaction } from 'kysely';
import type { Db, Dialect } from '../db/database.js';
import type { Database } from '../db/schema.js';

type Work<T> = (trx: Transaction<Database>) => Promise<T>;

interface Item {
  work: Work<unknown>;
  resolve(v: unknown): void;
  reject(err: unknown): void;
}

export interface Committer {
  run<T>(work: Work<T>): Promise<T>;
}

export function createCommitter(db: Db, dialect: Dialect, enabled: boolean, maxBatch = 64): Committer {
  if (!enabled || dialect !== 'sqlite') return { run: (work) => db.transaction().execute(work) };
  let queue: Item[] = [];
  let busy = false;

  const drain = async (): Promise<void> => {
    busy = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      let results: unknown[] | null = null;
      try {
        results = await db.transaction().execute(async (trx) => {
          const out: unknown[] = [];
          for (const item of batch) out.push(await item.work(trx));
          return out;
        });
      } catch {
        results = null;
      }
      if (results) {
        batch.forEach((item, i) => item.resolve(results![i]));
        continue;
      }
      for (const item of batch) {
        try {
          item.resolve(await db.transaction().execute(item.work));
        } catch (err) {
          item.reject(err);
        }
      }
    }
    busy = false;
  };

  return {
    run<T>(work: Work<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
        // Let the other sessions of this event-loop turn join the batch.
        if (!busy) {
          busy = true;
          setImmediate(() => void drain());
        }
      });
    },
  };
}
