// Group commit for SQLite. With synchronous=FULL every commit is an fsync of the WAL, and SQLite has
// one writer, so committing each accept and each dispatcher step on its own makes the disk the
// limit. Writes that arrive while a commit is in progress wait and are then committed together in
// one transaction, each inside its own SAVEPOINT so a failing write (quota, idempotent repeat)
// rolls back alone. Every caller still resolves only after the COMMIT that holds its write, so
// durability is exactly that of a transaction per write. PostgreSQL has concurrent writers and no
// single-writer queue: there each write is simply its own transaction.
import { sql, type Transaction } from 'kysely';
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

export function createWriteBatcher(db: Db, dialect: Dialect): WriteBatcher {
  if (dialect === 'postgres') return { run: (write) => db.transaction().execute(write) };
  let queue: Pending[] = [];
  let flushing = false;

  async function flush(): Promise<void> {
    flushing = true;
    while (queue.length) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      try {
        await db.transaction().execute(async (trx) => {
          for (const p of batch) {
            await sql`SAVEPOINT w`.execute(trx);
            try {
              outcomes.push({ ok: true, value: await p.write(trx) });
              await sql`RELEASE w`.execute(trx);
            } catch (error) {
              await sql`ROLLBACK TO w`.execute(trx);
              await sql`RELEASE w`.execute(trx);
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
        if (!flushing) {
          // Yield one turn of the event loop first, so writes of requests already read off their
          // sockets join this commit instead of each paying for its own.
          flushing = true;
          setImmediate(() => void flush());
        }
      });
    },
  };
}
