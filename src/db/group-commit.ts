// Group commit, the one mechanism every busy writer shares.
//
// SQLite: with synchronous=FULL every commit is an fsync of the WAL, SQLite has one writer, and
// better-sqlite3 runs the COMMIT (so its fsync) on the event loop's thread: committing each accept,
// each dispatcher step, each received message and each webhook result on its own makes the disk
// the limit and stalls the loop. Work that arrives while a commit is in progress (or within a short
// delay) waits and is then committed together in one transaction. Every caller still resolves only
// after the COMMIT that holds its work, so durability is exactly that of a transaction per item: a
// 202 or a 250 still means committed.
//
// PostgreSQL has concurrent writers and its own group commit, so the disk is not what batching
// saves there: round trips are. BEGIN and COMMIT are two of the three or four statements of most
// writes, and every statement costs the server about as much to receive and answer as a small
// one costs to run. Writes that arrive together share one transaction, with up to
// `PG_PARALLEL` such transactions in flight at once (the others' writes gather meanwhile). No
// SAVEPOINT per write (that would be two more round trips each): a batch in which any write fails
// is rolled back whole, and its writes are run again each in a transaction of its own, so the
// failing one fails alone. A write must therefore be safe to run twice, which every write is: it
// is a function of the transaction and nothing else. A write that may wait on another node's
// row locks (a read-decide-write) asks to run `alone`, so it does not hold up a batch.
//
// Two shapes share the queue:
//   - createWriteBatcher: any write (a function of the transaction), or an item of a bulk kind
//     (`runBulk`): on PostgreSQL the items of one kind in a batch are handed together to the kind's
//     `runMany`, which writes them with a few multi-row statements instead of a few each (the
//     ledger's changes, messages/ledger.ts). On SQLite, where a statement costs no round trip, and
//     when a PostgreSQL batch is retried write by write, each item runs alone (`runMany` of one),
//     the plain path every kind's test holds its many-item path to. On SQLite each write runs inside its own
//     SAVEPOINT, so a failing write (a quota, an idempotent repeat) rolls back alone. Commits start
//     at most once per `windowMs` (`dispatcher.commitWindow`): a write that arrives when the last
//     commit is older than the window is flushed on the next turn (no added latency when idle);
//     under load the writes of one window share one fsync.
//   - createBatchCommitter: items of one kind handed to one function that stores a whole batch with
//     a few multi-row statements (received mail: per-statement overhead is most of what storing
//     costs). A batch lingers as long as the previous commit took, capped at `maxLingerMs`, so the
//     sessions that finish within about one commit's time join it. If a batch fails, its items are
//     retried one transaction each so one bad item cannot sink the others.
import { CompiledQuery, type Transaction } from 'kysely';
import type { Db, Dialect } from './database.js';
import type { Database } from './schema.js';

export type Write<T> = (trx: Transaction<Database>) => Promise<T>;

/**
 * Writes of one kind that can be written many at once. `runMany` runs them in the caller's
 * transaction and returns one result per item, in order; given many it must leave the database as
 * running each alone (`runMany` of one), in order, would.
 */
export interface BulkKind<I, O> {
  runMany(trx: Transaction<Database>, items: I[]): Promise<O[]>;
}

export interface WriteBatcher {
  /** Commits `write`; `alone` keeps it out of a batch on PostgreSQL (it may wait on other writers' locks). */
  run<T>(write: Write<T>, opts?: { alone?: boolean }): Promise<T>;
  /** Commits `item` of `kind`, together with the other items of its kind in the batch on PostgreSQL. */
  runBulk<I, O>(kind: BulkKind<I, O>, item: I): Promise<O>;
}

// An item of a bulk kind, queued as a write.
interface BulkItem {
  kind: BulkKind<unknown, unknown>;
  item: unknown;
}
type Queued = Write<unknown> | BulkItem;
const runAlone = (trx: Transaction<Database>, q: Queued): Promise<unknown> =>
  typeof q === 'function' ? q(trx) : q.kind.runMany(trx, [q.item]).then((r) => r[0]);

export interface BatchCommitter<I, O> {
  store(item: I): Promise<O>;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Pending<I> {
  item: I;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

interface QueueOptions<I> {
  /** Runs a batch in the caller's transaction; one settled result per item, in order. */
  runBatch(trx: Transaction<Database>, items: I[]): Promise<Settled[]>;
  maxBatch: number;
  /** Milliseconds to wait before flushing, given when the last commit began and how long it took. */
  delay(lastCommitAt: number, lastCommitMs: number): number;
  /** When the whole batch fails: retry each item in a transaction of its own (else all fail). */
  retryAlone: boolean;
  /** Told the seconds each committed batch took (metrics). */
  observe?: (seconds: number) => void;
}

// Commits one batch and settles each of its items; when the whole batch fails and `retryAlone`
// says so, each item is tried again in a transaction of its own.
async function commitBatch<I>(
  db: Db,
  opts: Pick<QueueOptions<I>, 'runBatch' | 'retryAlone' | 'observe'>,
  batch: Pending<I>[],
  took: (ms: number) => void = () => {},
): Promise<void> {
  const inTransaction = (items: I[]) => db.transaction().execute((trx) => opts.runBatch(trx, items));
  const started = performance.now();
  let outcomes: Settled[] | null = null;
  let failure: unknown = null;
  try {
    outcomes = await inTransaction(batch.map((p) => p.item));
  } catch (error) {
    failure = error;
  }
  const ms = performance.now() - started;
  took(ms);
  if (outcomes) {
    opts.observe?.(ms / 1000);
    batch.forEach((p, i) => {
      const o = outcomes[i];
      if (o.ok) p.resolve(o.value);
      else p.reject(o.error);
    });
    return;
  }
  if (!opts.retryAlone || batch.length === 1) {
    for (const p of batch) p.reject(failure);
    return;
  }
  for (const p of batch) {
    try {
      const [o] = await inTransaction([p.item]);
      if (o.ok) p.resolve(o.value);
      else p.reject(o.error);
    } catch (err) {
      p.reject(err);
    }
  }
}

// The queue both shapes use on SQLite: collect, wait per the delay rule, commit a batch, settle each item.
function createQueue<I>(db: Db, opts: QueueOptions<I>): (item: I) => Promise<unknown> {
  let queue: Pending<I>[] = [];
  let flushing = false;
  let timer: NodeJS.Timeout | null = null;
  let lastCommitAt = -Infinity;
  let lastCommitMs = 0;

  async function flush(): Promise<void> {
    flushing = true;
    timer = null;
    while (queue.length) {
      const batch = queue.slice(0, opts.maxBatch);
      queue = queue.slice(batch.length);
      lastCommitAt = performance.now();
      await commitBatch(db, opts, batch, (ms) => (lastCommitMs = ms));
    }
    flushing = false;
  }

  return (item) =>
    new Promise((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (flushing && timer && queue.length >= opts.maxBatch) {
        // A full batch need not wait for the rest of the delay.
        clearTimeout(timer);
        timer = null;
        setImmediate(() => void flush());
      } else if (!flushing) {
        // Yield at least one turn of the event loop first, so work of requests already read off
        // their sockets joins this commit instead of each paying for its own.
        flushing = true;
        const wait = opts.delay(lastCommitAt, lastCommitMs);
        if (wait >= 1) timer = setTimeout(() => void flush(), wait);
        else setImmediate(() => void flush());
      }
    });
}

// Compiled once: three of these run per write, and building a sql`` query each time cost more
// than SQLite running it.
const SAVEPOINT = CompiledQuery.raw('SAVEPOINT w');
const RELEASE = CompiledQuery.raw('RELEASE w');
const ROLLBACK_TO = CompiledQuery.raw('ROLLBACK TO w');

const MAX_WRITES = 256;

/** Any writes, committed together: each in its own savepoint on SQLite, rolled back and retried alone on PostgreSQL. */
export function createWriteBatcher(
  db: Db,
  dialect: Dialect,
  opts: { windowMs?: number; observe?: (seconds: number) => void } = {},
): WriteBatcher {
  if (dialect === 'postgres') return postgresWriteBatcher(db, opts.observe);
  const windowMs = opts.windowMs ?? 0;
  const submit = createQueue<Write<unknown>>(db, {
    maxBatch: MAX_WRITES,
    retryAlone: false,
    observe: opts.observe,
    delay: (lastCommitAt) => lastCommitAt + windowMs - performance.now(),
    async runBatch(trx, writes) {
      const outcomes: Settled[] = [];
      for (const write of writes) {
        await trx.executeQuery(SAVEPOINT);
        try {
          outcomes.push({ ok: true, value: await write(trx) });
          await trx.executeQuery(RELEASE);
        } catch (error) {
          await trx.executeQuery(ROLLBACK_TO);
          await trx.executeQuery(RELEASE);
          outcomes.push({ ok: false, error });
        }
      }
      return outcomes;
    },
  });
  return {
    run: <T>(write: Write<T>) => submit(write) as Promise<T>,
    runBulk: <I, O>(kind: BulkKind<I, O>, item: I) => submit((trx) => runAlone(trx, { kind, item })) as Promise<O>,
  };
}

// Transactions of batched writes in flight at once on PostgreSQL: enough that one waiting on a
// lock or a slow commit does not stop the others, few enough to leave the pool (10) for reads.
const PG_PARALLEL = 3;

function postgresWriteBatcher(db: Db, observe: ((seconds: number) => void) | undefined): WriteBatcher {
  let queue: Pending<Queued>[] = [];
  let active = 0;
  let scheduled = false;
  const opts = {
    retryAlone: true,
    observe,
    async runBatch(trx: Transaction<Database>, writes: Queued[]): Promise<Settled[]> {
      if (writes.length === 1) return [{ ok: true, value: await runAlone(trx, writes[0]) }];
      const outcomes: Settled[] = new Array(writes.length);
      // The items of each bulk kind, by their place in the batch; run when the kind is first met.
      const kinds = new Map<BulkKind<unknown, unknown>, number[]>();
      writes.forEach((w, i) => {
        if (typeof w === 'function') return;
        const places = kinds.get(w.kind);
        if (places) places.push(i);
        else kinds.set(w.kind, [i]);
      });
      for (let i = 0; i < writes.length; i++) {
        const w = writes[i];
        if (typeof w === 'function') {
          outcomes[i] = { ok: true, value: await w(trx) };
          continue;
        }
        const places = kinds.get(w.kind);
        if (!places) continue; // run with the first of its kind
        kinds.delete(w.kind);
        const values = await w.kind.runMany(
          trx,
          places.map((p) => (writes[p] as BulkItem).item),
        );
        places.forEach((p, k) => (outcomes[p] = { ok: true, value: values[k] }));
      }
      return outcomes;
    },
  };
  // Starts batches while fewer than PG_PARALLEL are in flight; each one that ends starts the next.
  function start(): void {
    while (active < PG_PARALLEL && queue.length > 0) {
      const batch = queue.slice(0, MAX_WRITES);
      queue = queue.slice(batch.length);
      active++;
      void commitBatch(db, opts, batch).finally(() => {
        active--;
        start();
      });
    }
  }
  const enqueue = (item: Queued): Promise<unknown> =>
    new Promise((resolve, reject) => {
      queue.push({ item, resolve, reject });
      // One turn of the event loop first, so the writes of work already read join this batch.
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => {
          scheduled = false;
          start();
        });
      }
    });
  return {
    run<T>(write: Write<T>, runOpts: { alone?: boolean } = {}): Promise<T> {
      if (runOpts.alone) return timed(db.transaction().execute(write), observe);
      return enqueue(write) as Promise<T>;
    },
    runBulk: <I, O>(kind: BulkKind<I, O>, item: I) => enqueue({ kind, item }) as Promise<O>,
  };
}

/**
 * Items stored a batch at a time by `storeBatch` (one result per item, in order) on SQLite; on
 * PostgreSQL, or when `enabled` is false, each item is its own transaction.
 */
export function createBatchCommitter<I, O>(
  db: Db,
  dialect: Dialect,
  opts: {
    storeBatch(trx: Transaction<Database>, items: I[]): Promise<O[]>;
    enabled: boolean;
    maxBatch: number;
    maxLingerMs: number;
    observe?: (seconds: number) => void;
  },
): BatchCommitter<I, O> {
  if (!opts.enabled || dialect !== 'sqlite') {
    return {
      store: async (item) =>
        (
          await timed(
            db.transaction().execute((trx) => opts.storeBatch(trx, [item])),
            opts.observe,
          )
        )[0],
    };
  }
  const submit = createQueue<I>(db, {
    maxBatch: opts.maxBatch,
    retryAlone: true,
    observe: opts.observe,
    delay: (_at, lastCommitMs) => Math.min(lastCommitMs, opts.maxLingerMs),
    async runBatch(trx, items) {
      return (await opts.storeBatch(trx, items)).map((value) => ({ ok: true, value }));
    },
  });
  return { store: (item) => submit(item) as Promise<O> };
}

/** A transaction's promise, its time told to `observe` when it commits. */
async function timed<T>(commit: Promise<T>, observe: ((seconds: number) => void) | undefined): Promise<T> {
  if (!observe) return commit;
  const started = performance.now();
  const value = await commit;
  observe((performance.now() - started) / 1000);
  return value;
}
