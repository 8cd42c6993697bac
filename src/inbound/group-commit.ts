// Group commit for SQLite: with synchronous=FULL every transaction costs one fsync of the WAL, and
// better-sqlite3 blocks the event loop for it. Work that arrives while a commit is in flight is
// queued and committed together in the next transaction, so N concurrent SMTP transactions cost
// one fsync instead of N — each still gets its 250 only after its own rows are durable. If a batch
// fails, its items are retried one transaction each so one bad item cannot sink the others. A batch
// is stored with a few multi-row statements (store.ts storeMessages), not a few per message.
// PostgreSQL has a pool and its own group commit; there each item is its own transaction.
// Batches form by lingering: a drain waits as long as the previous commit took (capped at
// `maxLingerMs`), because the event loop is blocked that long by a commit anyway; without it, work
// arriving one session at a time (new connections, staggered parses) commits one item per fsync
// and the loop spends most of its time in fsync, with verification and parsing waiting behind it.
// When those run on analysis threads the loop has little else to do, and a commit runs while the
// threads work: then the cap is 0 and a batch is whatever arrived during the previous commit.
// With a store worker attached (SQLite opened by the daemon itself), received messages are stored
// by store-worker.ts on its own connection instead: the fsync leaves the event loop entirely, and
// batches form from whatever arrives while the previous one commits (one batch in flight). Off by
// default (`inbound.storeWorker`): measured on 2 cores it is slower — the worker's write lock makes
// the main connection's own writers (webhook fan-out, forwarder, API) wait in SQLite's busy handler
// on the event loop, and cloning each request and building the event payload cost CPU the parser
// needs; see the README, Receiving mail: Benchmark.
import type { Worker } from 'node:worker_threads';
import type { Db, Dialect } from '../db/database.js';
import { startThread } from '../lib/thread.js';
import { storeMessages, type StoreRequest, type StoreResult } from './store.js';
import type { StoreWorkerReply } from './store-worker.js';

interface Item {
  req: StoreRequest;
  resolve(v: StoreResult): void;
  reject(err: unknown): void;
}

export interface Committer {
  /** Stores one received message (with others in one transaction): in the store worker when attached. */
  store(req: StoreRequest): Promise<StoreResult>;
  /** Moves store() to a worker thread with its own connection to this SQLite file. */
  attachWorker(file: string, onError?: (err: unknown) => void): void;
  /** Waits for stores in flight, then stops the worker. */
  close(): Promise<void>;
  /** Batches the store worker committed (tests check that the worker was used). */
  readonly stats: { workerBatches: number };
}

type RunOnly = Pick<Committer, 'store'>;

export function createCommitter(db: Db, dialect: Dialect, opts: { enabled: boolean; maxLingerMs: number; maxBatch?: number }): Committer {
  const base = createRunner(db, dialect, opts.enabled, opts.maxBatch ?? 64, opts.maxLingerMs);
  return withStoreWorker(base, dialect);
}

interface Pending {
  id: number;
  req: StoreRequest;
  resolve(v: StoreResult): void;
  reject(err: unknown): void;
}

const WORKER_MAX_BATCH = 128;

function withStoreWorker(base: RunOnly, dialect: Dialect): Committer {
  const stats = { workerBatches: 0 };
  let worker: Worker | null = null;
  let nextId = 1;
  let queue: Pending[] = [];
  let inFlight = new Map<number, Pending>();
  let idle: (() => void) | null = null;
  const viaRunner = (p: Pending) => base.store(p.req).then(p.resolve, p.reject);

  const send = () => {
    if (!worker || inFlight.size > 0 || queue.length === 0) return;
    const batch = queue.slice(0, WORKER_MAX_BATCH);
    queue = queue.slice(batch.length);
    for (const p of batch) inFlight.set(p.id, p);
    worker.postMessage({ batch: batch.map(({ id, req }) => ({ id, req })) });
  };
  const settleIdle = () => {
    if (idle && inFlight.size === 0 && queue.length === 0) idle();
  };

  return {
    stats,
    store(req) {
      return new Promise<StoreResult>((resolve, reject) => {
        const p: Pending = { id: nextId++, req, resolve, reject };
        if (!worker) return void viaRunner(p);
        queue.push(p);
        send();
      });
    },
    attachWorker(file, onError) {
      if (dialect !== 'sqlite' || worker) return;
      const w = startThread(import.meta.url, 'store-worker', { file });
      w.unref();
      w.on('message', (replies: StoreWorkerReply[]) => {
        stats.workerBatches++;
        for (const r of replies) {
          const p = inFlight.get(r.id);
          if (!p) continue;
          inFlight.delete(r.id);
          if (r.ok) p.resolve(r.value);
          else p.reject(new Error(r.error));
        }
        send();
        settleIdle();
      });
      const fail = (err: unknown) => {
        if (worker !== w) return;
        worker = null;
        onError?.(err);
        // Whatever the worker held is unknown: refuse it (the client retries after a 451);
        // what was still queued goes through the event-loop committer.
        for (const p of inFlight.values()) p.reject(new Error('store worker stopped'));
        inFlight = new Map();
        const rest = queue;
        queue = [];
        for (const p of rest) void viaRunner(p);
        settleIdle();
      };
      w.on('error', fail);
      w.on('exit', (code) => fail(new Error(`store worker exited with ${code}`)));
      worker = w;
    },
    async close() {
      const w = worker;
      if (!w) return;
      if (inFlight.size > 0 || queue.length > 0) await new Promise<void>((resolve) => (idle = resolve));
      idle = null;
      worker = null;
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage({ close: true });
      await exited;
    },
  };
}

function createRunner(db: Db, dialect: Dialect, enabled: boolean, maxBatch: number, maxLingerMs: number): RunOnly {
  const inTransaction = (reqs: StoreRequest[]) => db.transaction().execute((trx) => storeMessages(trx, reqs));
  if (!enabled || dialect !== 'sqlite') {
    return {
      store: async (req) => (await inTransaction([req]))[0],
    };
  }
  let queue: Item[] = [];
  let busy = false;
  let lastCommitMs = 0;

  const drain = async (): Promise<void> => {
    busy = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      let results: StoreResult[] | null = null;
      const t0 = performance.now();
      try {
        results = await inTransaction(batch.map((item) => item.req));
      } catch {
        results = null;
      }
      lastCommitMs = performance.now() - t0;
      if (results) {
        batch.forEach((item, i) => item.resolve(results![i]));
        continue;
      }
      for (const item of batch) {
        try {
          item.resolve((await inTransaction([item.req]))[0]);
        } catch (err) {
          item.reject(err);
        }
      }
    }
    busy = false;
  };

  return {
    store(req) {
      return new Promise<StoreResult>((resolve, reject) => {
        queue.push({ req, resolve, reject });
        // Let the sessions that finish within about one commit's time join the batch.
        if (!busy) {
          busy = true;
          const linger = Math.min(lastCommitMs, maxLingerMs);
          if (linger >= 1) setTimeout(() => void drain(), linger);
          else setImmediate(() => void drain());
        }
      });
    },
  };
}
