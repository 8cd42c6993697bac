// Verification and parsing are most of the CPU a received message costs (mailauth hashes the body
// for DKIM, mailparser walks the MIME tree), and all of it is a pure function of the bytes. With
// `inbound.analysisThreads` > 0 it runs in that many worker threads, so the event loop only speaks
// SMTP and commits, and a second core does the rest. Threads start at the first SMTP connection,
// while the client is being greeted (most daemons in tests never get one), and are restarted on
// demand if one dies; the messages it held get an error, which the listener answers with a 451
// (the sender retries; nothing was stored).
// With 0 threads, or a resolver injected by the caller (tests) that a thread cannot share, the
// analysis runs on the event loop.
import type { Worker } from 'node:worker_threads';
import type { DnsResolver } from '../lib/dns.js';
import { startThread } from '../lib/thread.js';
import { analyze, type AnalyzeInput, type Analysis } from './analyze.js';
import type { AnalysisReply, AnalysisThreadData } from './analysis-worker.js';
import { cachedLookup } from './verify.js';

export interface Analyzer {
  /** True when analyses run on threads, not on the event loop. */
  readonly threaded: boolean;
  analyze(input: AnalyzeInput): Promise<Analysis>;
  /** Starts the threads that are not running, so the first message does not wait for one. */
  warm(): void;
  /** Stops the threads; analyses still in flight are rejected. */
  close(): Promise<void>;
}

interface Pending {
  resolve(v: Analysis): void;
  reject(err: unknown): void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

export function createAnalyzer(opts: { threads: number; dns: DnsResolver; thread: AnalysisThreadData | null }): Analyzer {
  const lookup = cachedLookup(opts.dns);
  if (opts.threads <= 0 || !opts.thread) {
    return { threaded: false, analyze: (input) => analyze(lookup, input), warm: () => {}, close: async () => {} };
  }
  const data = opts.thread;
  const threads: (Thread | null)[] = Array.from({ length: opts.threads }, () => null);
  let nextId = 1;
  let closed = false;

  const start = (slot: number): Thread => {
    const t: Thread = { worker: startThread(import.meta.url, 'analysis-worker', data), pending: new Map() };
    t.worker.unref();
    t.worker.on('message', (r: AnalysisReply) => {
      const p = t.pending.get(r.id);
      if (!p) return;
      t.pending.delete(r.id);
      if (r.ok) p.resolve(r.value);
      else p.reject(new Error(r.error));
    });
    const fail = (err: unknown) => {
      if (threads[slot] === t) threads[slot] = null;
      for (const p of t.pending.values()) p.reject(err instanceof Error ? err : new Error(String(err)));
      t.pending.clear();
    };
    t.worker.on('error', fail);
    t.worker.on('exit', (code) => fail(new Error(`analysis thread exited with ${code}`)));
    threads[slot] = t;
    return t;
  };

  // The thread with the fewest messages in flight (started if its slot is empty).
  const pick = (): Thread => {
    let best = -1;
    for (let i = 0; i < threads.length; i++) {
      const t = threads[i];
      if (!t) return start(i);
      if (best === -1 || t.pending.size < threads[best]!.pending.size) best = i;
    }
    return threads[best]!;
  };

  return {
    threaded: true,
    analyze(input) {
      if (closed) return Promise.reject(new Error('analysis threads stopped'));
      const t = pick();
      const id = nextId++;
      return new Promise<Analysis>((resolve, reject) => {
        t.pending.set(id, { resolve, reject });
        t.worker.postMessage({ id, input });
      });
    },
    warm() {
      if (closed) return;
      for (let i = 0; i < threads.length; i++) if (!threads[i]) start(i);
    },
    async close() {
      closed = true;
      await Promise.all(threads.map((t) => t?.worker.terminate()));
    },
  };
}
