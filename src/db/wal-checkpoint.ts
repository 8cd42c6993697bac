// WAL checkpoints off the event loop while the daemon is busy writing.
//
// SQLite checkpoints the WAL itself inside the COMMIT that grows it past 1,000 pages: it syncs the
// WAL, copies its pages into the database file and syncs that, all on the thread that committed,
// which for better-sqlite3 is the event loop. Under a steady stream of writes that was a third of
// the loop's time in COMMIT (`npm run bench send`, batches). So once commits have arrived at
// BUSY_COMMITS a second or more for BUSY_SECONDS seconds in a row, the daemon's connection does
// not checkpoint (`wal_autocheckpoint = 0`) and a thread with a connection of its own runs a
// PASSIVE checkpoint at most every CHECKPOINT_EVERY_MS while commits arrive. After REST_AFTER_MS
// without a busy second the thread stops (an isolate and a connection are memory an idle daemon
// does not need) and the connection checkpoints itself again, as SQLite does by default; busy
// seconds in a row start another thread.
//
// Why nothing changes for durability: a checkpoint is SQLite's own, whichever connection runs it. It
// syncs the WAL before copying and the database after, and the WAL restarts (its frames are
// overwritten) only once a checkpoint has copied every frame and no reader still needs them, which
// SQLite checks in the writer. PASSIVE never waits for a lock and never blocks a writer or a reader:
// it copies what it can, and the next pass copies the rest.
//
// If the thread fails (it cannot open the file, it crashes), the connection checkpoints itself from
// then on, so the WAL never grows without bound.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What one PASSIVE checkpoint reported: frames in the WAL, and how many of them are in the database. */
export interface CheckpointPass {
  busy: number;
  log: number;
  checkpointed: number;
}

export interface Checkpointer {
  /** A commit was made (checkpoint soon, if the daemon is busy). */
  committed(): void;
  /** Resolves when no checkpoint is due or running; with the last pass, or null when none ran. */
  settled(): Promise<CheckpointPass | null>;
  /** Whether the thread failed (the connection checkpoints itself from then on). */
  readonly lost: boolean;
  /** Threads started so far (a rested thread is followed by another when the daemon is busy again). */
  readonly started: number;
  /** Whether a thread is up now (false until a busy second and while resting). */
  readonly up: boolean;
  close(): Promise<void>;
}

const CHECKPOINT_EVERY_MS = 100;
const BUSY_COMMITS = 20;
// Two seconds, so a start's migrations (one busy second) start no thread.
const BUSY_SECONDS = 2;
const REST_AFTER_MS = 10_000;
// What SQLite checkpoints at by default, and the connection again while no thread does.
const SQLITE_DEFAULT_PAGES = 1000;

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
 * Checkpoints `file`'s WAL from a thread while commits are frequent. `ownConnection`: the daemon's
 * connection, told to stop checkpointing while a thread does it and to start again when it rests.
 */
export function createCheckpointer(
  file: string,
  ownConnection: { pragma(source: string): unknown },
  opts: {
    everyMs?: number;
    busyCommits?: number;
    busySeconds?: number;
    restAfterMs?: number;
    onLost?: (err: unknown) => void;
    /** Milliseconds of a monotonic clock (tests); performance.now() by default. */
    now?: () => number;
  } = {},
): Checkpointer {
  const everyMs = opts.everyMs ?? CHECKPOINT_EVERY_MS;
  const busyCommits = opts.busyCommits ?? BUSY_COMMITS;
  const busySeconds = opts.busySeconds ?? BUSY_SECONDS;
  const clock = opts.now ?? (() => performance.now());
  const restAfterMs = opts.restAfterMs ?? REST_AFTER_MS;
  let worker: Worker | null = null;
  let lost = false;
  let closing = false;
  let timer: NodeJS.Timeout | null = null;
  let restTimer: NodeJS.Timeout | null = null;
  let running = false;
  let dirty = false;
  let last: CheckpointPass | null = null;
  let waiters: (() => void)[] = [];
  let started = 0;
  let up = false;
  // Commits in the current one-second window; busy windows in a row (this one included once it
  // is busy); and when the daemon was last busy (a busy window that ends such a run).
  let windowStart = -Infinity;
  let windowCommits = 0;
  let windowBusy = false;
  let busyRun = 0;
  let lastBusy = -Infinity;

  const idle = () => !timer && !running;
  const wake = () => {
    if (!idle()) return;
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };
  const selfCheckpointing = () => ownConnection.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);

  // Only the current thread's end is a failure: one told to rest or close ended as asked.
  const giveUp = (w: Worker, err: unknown) => {
    if (lost || closing || w !== worker) return;
    lost = true;
    worker = null;
    running = false;
    if (timer) clearTimeout(timer);
    if (restTimer) clearTimeout(restTimer);
    timer = restTimer = null;
    selfCheckpointing();
    opts.onLost?.(err);
    wake();
  };

  const start = (): Worker => {
    ownConnection.pragma('wal_autocheckpoint = 0');
    const w = new Worker(THREAD, { eval: true, workerData: { file, driver: driverPath() } });
    started++;
    up = true;
    w.unref();
    w.on('message', (m: { pass: CheckpointPass } | { error: string }) => {
      running = false;
      w.unref();
      if ('pass' in m) last = m.pass;
      // A failed pass (the disk full, say) is tried again at the next commit, as SQLite would.
      if (dirty) schedule();
      wake();
    });
    w.on('error', (err) => giveUp(w, err));
    w.on('exit', (code) => {
      // Down, unless a newer thread has started meanwhile.
      if (worker === null || worker === w) up = false;
      giveUp(w, new Error(`the checkpoint thread exited with ${code}`));
    });
    restLater(restAfterMs);
    return w;
  };

  // The thread rests once REST_AFTER_MS have passed since the last busy second, with no pass due.
  const restLater = (ms: number) => {
    restTimer = setTimeout(() => {
      restTimer = null;
      if (!worker) return;
      const quiet = clock() - lastBusy;
      if (quiet < restAfterMs || !idle()) return restLater(Math.max(everyMs, restAfterMs - quiet));
      const w = worker;
      worker = null;
      selfCheckpointing();
      w.postMessage('close');
    }, ms);
    restTimer.unref();
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
      if (lost || closing) return;
      const now = clock();
      if (now - windowStart >= 1000) {
        // The run goes on only from a busy window just before this one.
        if (!windowBusy || now - windowStart >= 2000) busyRun = 0;
        windowStart = now;
        windowCommits = 0;
        windowBusy = false;
      }
      if (++windowCommits >= busyCommits && !windowBusy) {
        windowBusy = true;
        busyRun++;
      }
      const busy = windowBusy && busyRun >= busySeconds;
      if (busy) lastBusy = now;
      // Quiet and no thread: SQLite's own checkpoints serve.
      if (!worker && !busy) return;
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
    get started() {
      return started;
    },
    get up() {
      return up;
    },
    async close() {
      closing = true;
      if (timer) clearTimeout(timer);
      if (restTimer) clearTimeout(restTimer);
      timer = restTimer = null;
      const w = worker;
      worker = null;
      running = false;
      wake();
      if (!w) return;
      selfCheckpointing();
      // The process is held until the thread has closed its connection: the thread itself is
      // unref'd whenever a pass ends, so a stop with nothing else left to do (a daemon whose start
      // failed) would otherwise end the process before the close, silently and with status 0.
      const hold = setInterval(() => {}, 60_000);
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.postMessage('close');
      await exited.finally(() => clearInterval(hold));
    },
  };
}
