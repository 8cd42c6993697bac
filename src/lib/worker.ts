// A background worker: runs `run()` every `intervalMs`, or sooner when woken, never twice at once.
// Tests and benchmarks call tick() to run one pass and await it, instead of sleeping.
import type { Logger } from './logger.js';

export interface WorkerSpec {
  name: string;
  intervalMs: number;
  /**
   * One pass. Returns true when it did work and another pass should follow at once. `settle`: the
   * pass is a tick() and should end with the work it started done; a background pass need not.
   */
  run(opts: { settle: boolean }): Promise<boolean | void>;
  /** Milliseconds until the next pass is wanted when that is sooner than intervalMs (work falls due then). */
  nextPassIn?(): number | null;
}

export interface Worker {
  readonly name: string;
  start(): void;
  /** Asks for a pass soon (e.g. after new work was committed). */
  wake(): void;
  /** Runs passes until one reports no work; resolves when done. */
  tick(): Promise<void>;
  /** Stops scheduling and waits for the pass in flight. */
  stop(): Promise<void>;
}

export function createWorker(spec: WorkerSpec, log: Logger): Worker {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let started = false;
  let stopped = false;
  let again = false;

  const pass = async (settle: boolean): Promise<void> => {
    for (let i = 0; i < 10_000; i++) {
      again = false;
      let more: boolean | void = false;
      try {
        more = await spec.run({ settle });
      } catch (err) {
        log.error({ err, worker: spec.name }, 'worker pass failed');
        return;
      }
      // A stop ends the pass after the call in flight, however much work is left.
      if (stopped || (!more && !again)) return;
    }
  };

  const runNow = (settle = false): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = pass(settle).finally(() => {
      running = null;
      const soon = spec.nextPassIn?.() ?? null;
      schedule(soon === null ? spec.intervalMs : Math.max(0, Math.min(spec.intervalMs, soon)));
    });
    return running;
  };

  const schedule = (delay = spec.intervalMs) => {
    if (!started) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void runNow();
    }, delay);
    timer.unref();
  };

  return {
    name: spec.name,
    start() {
      started = true;
      schedule(0);
    },
    wake() {
      if (started) schedule(0);
    },
    async tick() {
      while (running) await running;
      await runNow(true);
    },
    async stop() {
      started = false;
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      while (running) await running;
    },
  };
}
