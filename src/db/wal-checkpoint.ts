// WAL checkpoints off the event loop.
//
// SQLite checkpoints the WAL itself inside the COMMIT that grows it past 1,000 pages: it syncs the
// WAL, copies its pages into the database file and syncs that, all on the thread that committed,
// which for better-sqlite3 is the event loop. Under a steady stream of writes that was a third of
// the loop's time in COMMIT (`npm run bench send`, batches). Here the daemon's connection never
// checkpoints (`wal_autocheckpoint = 0`); a thread with a connection of its own runs a PASSIVE
// checkpoint at most every CHECKPOINT_EVERY_MS while commits arrive, and once after the last.
//
// Why nothing changes for durability: a checkpoint is SQLite's own, whichever connection runs it. It
// syncs the WAL before copying and the database after, and the WAL restarts (its frames are
// overwritten) only once a checkpoint has copied every frame and no reader still needs them, which
// SQLite checks in the writer. PASSIVE never waits for a lock and never blocks a writer or a reader:
// it copies what it can, and the next pass copies the rest.
//
// If the thread stops (it cannot open the file, it crashes), the connection checkpoints itself again
// as SQLite does by default, so the WAL never grows without bound.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What one PASSIVE checkpoint reported: frames in the WAL, and how many of them are in the database. */
export interface CheckpointPass {
  busy: number;
  log: number;
  checkpointed: number;
}

export interface Checkpointer {
  /** A commit was made (checkpoint soon). */
  committed(): void;
  /** Resolves when no checkpoint is due or running; with the last pass, or null when none ran. */
  settled(): Promise<CheckpointPass | null>;
  /** Whether the thread stopped other than by close() (the connection checkpoints itself again). */
  readonly lost: boolean;
  close(): Promise<void>;
}

const CHECKPOINT_EVERY_MS = 100;

// The thread's whole program: CommonJS by eval, so it runs the same built or under tsx (tests) and
// loads nothing of ours. It answers each request with the pass's figures or the error's message.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
parentPort.on('message', (m) => {
  if (m === 'close') { db.close(); parentPort.close(); return; }
  try { parentPort.postMessage({ pass: db.pragma('wal_checkpoint(PASSIVE)')[0] }); }
  catch (err) { parentPort.postMessage({ error: String(err && err.message || err) }); }
});
`;

const driverPath = (): string => createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Checkpoints `file`'s WAL from a thread. `ownConnection`: the daemon's connection, told to stop
 * checkpointing now and to start again if the thread is lost. The thread starts at the first commit.
 */
export function createCheckpointer(
  file: string,
  ownConnection: { pragma(source: string): unknown },
  opts: { everyMs?: number; onLost?: (err: unknown) => void } = {},
): Checkpointer {
  const everyMs = opts.everyMs ?? CHECKPOINT_EVERY_MS;
  ownConnection.pragma('wal_autocheckpoint = 0');
  let worker: Worker | null = null;
  let lost = false;
  let closing = false;
  let timer: NodeJS.Timeout | null = null;
  let running = false;
  let dirty = false;
  let last: CheckpointPass | null = null;
  let waiters: (() => void)[] = [];

  const idle = () => !timer && !running;
  const wake = () => {
    if (!idle()) return;
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };
  const giveUp = (err: unknown) => {
    if (lost || closing) return;
    lost = true;
    worker = null;
    running = false;
    if (timer) clearTimeout(timer);
    timer = null;
    ownConnection.pragma('wal_autocheckpoint = 1000');
    opts.onLost?.(err);
    wake();
  };

  const start = (): Worker => {
    const w = new Worker(THREAD, { eval: true, workerData: { file, driver: driverPath() } });
    w.unref();
    w.on('message', (m: { pass: CheckpointPass } | { error: string }) => {
      running = false;
      w.unref();
      if ('pass' in m) last = m.pass;
      // A failed pass (the disk full, say) is tried again at the next commit, as SQLite would.
      if (dirty) schedule();
      wake();
    });
    w.on('error', giveUp);
    w.on('exit', (code) => giveUp(new Error(`the checkpoint thread exited with ${code}`)));
    return w;
  };

  const run = () => {
    timer = null;
    if (lost || closing) return wake();
    dirty = false;
    running = true;
    worker ??= start();
    // Held while a pass runs, as a pool's thread is while it has calls (lib/threads.ts).
    worker.ref();
    worker.postMessage('checkpoint');
  };
  const schedule = () => {
    if (timer || running || lost || closing) return;
    timer = setTimeout(run, everyMs);
    timer.unref();
  };

  return {
    committed() {
      dirty = true;
      schedule();
    },
    settled() {
      if (idle()) return Promise.resolve(last);
      // Someone waits for the pass: the timer keeps the process alive for it.
      timer?.ref();
      return new Promise((resolve) => waiters.push(() => resolve(last)));
    },
    get lost() {
      return lost;
    },
    async close() {
      closing = true;
      if (timer) clearTimeout(timer);
      timer = null;
      const w = worker;
      worker = null;
      running = false;
      wake();
      if (!w) return;
      // Held until it has closed its connection (it is unref'd, so a closing process would not wait).
      w.ref();
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage('close');
      await exited;
    },
  };
}
