// Verification and parsing are most of the CPU a received message costs (mailauth hashes the body
// for DKIM, mailparser walks the MIME tree), and all of it is a pure function of the bytes. With
// `inbound.analysisThreads` > 0 it runs in that many worker threads (lib/threads.ts), so the event
// loop only speaks SMTP and commits, and a second core does the rest. Threads start at the first
// SMTP connection, while the client is being greeted (most daemons in tests never get one), and are
// restarted on demand if one dies; the messages it held get an error, which the listener answers
// with a 451 (the sender retries; nothing was stored).
// A caller done with the received bytes gives them to the thread (a transfer, not a copy), and the
// source to store comes back the same way, so the event loop holds one copy of a message in
// flight, not three. With 0 threads, or a resolver injected by the caller (tests) that a thread
// cannot share, the analysis runs on the event loop.
import type { DnsResolver } from '../lib/dns.js';
import { createThreadPool, ownsBuffer, startThread } from '../lib/threads.js';
import type { AnalysisThreadData } from './analysis-worker.js';
import { analyze, type AnalyzeInput, type Analysis } from './analyze.js';
import { cachedLookup } from './verify.js';

export interface Analyzer {
  /** True when analyses run on threads, not on the event loop. */
  readonly threaded: boolean;
  /** `giveRaw`: the caller is done with `input.raw`, which a thread may then take without a copy. */
  analyze(input: AnalyzeInput, opts?: { giveRaw?: boolean }): Promise<Analysis>;
  /** Starts the threads that are not running, so the first message does not wait for one. */
  warm(): void;
  /** Stops the threads; analyses still in flight are rejected. */
  close(): Promise<void>;
}

export interface AnalyzerOptions {
  threads: number;
  dns: DnsResolver;
  thread: AnalysisThreadData | null;
  /**
   * Each thread's young generation in MB (`memory.analysisYoungGenerationMb`); 0 leaves V8's own.
   * A thread parses a message at a time, so little of what it allocates outlives a collection of a
   * smaller young generation; the memory saved shows at the daemon's peak (docs/performance.md).
   */
  youngGenerationMb?: number;
}

export function createAnalyzer(opts: AnalyzerOptions): Analyzer {
  const lookup = cachedLookup(opts.dns);
  if (opts.threads <= 0 || !opts.thread) {
    return { threaded: false, analyze: (input) => analyze(lookup, input), warm: () => {}, close: async () => {} };
  }
  const data = opts.thread;
  const limits = opts.youngGenerationMb ? { maxYoungGenerationSizeMb: opts.youngGenerationMb } : undefined;
  // Each call is a whole message and its sender waits on the answer: posted and answered at once.
  const pool = createThreadPool<AnalyzeInput, Analysis>({
    size: opts.threads,
    batch: false,
    start: () => startThread(import.meta.url, 'analysis-worker', data, limits),
  });
  return {
    threaded: true,
    analyze: (input, o) =>
      pool.call(input, undefined, o?.giveRaw && ownsBuffer(input.raw, input.headroom) ? [input.raw.buffer as ArrayBuffer] : []),
    warm: () => pool.warm(),
    close: () => pool.close(),
  };
}
