// Rendering off the event loop. The dispatcher's pure CPU work — Mustache, deriving the text part
// from html (html-to-text), building the MIME message (MailComposer) and signing it (DKIM) — took
// about a seventh of a busy daemon's event loop (`npm run bench delivery` profile), time in which
// the loop could neither accept sends nor drive SMTP conversations. `dispatcher.renderThreads`
// worker threads (default 1) run those jobs (render-jobs.ts) instead; the loop keeps the database,
// the queue and the sockets. 0 runs them on the event loop as before.
//
// Jobs are pure (data in, data out), so nothing is lost if a thread dies: its unfinished jobs are
// run again on the event loop, and a new thread is started for the next job. A thread that cannot
// start at all (after a few tries) leaves every job on the event loop, with an error in the log.
// Threads start on first use (a daemon that never sends email never starts one) and do not keep
// the process alive while idle.
import { Worker } from 'node:worker_threads';
import type { Logger } from '../lib/logger.js';
import type { ChannelOutput } from '../templates/render.js';
import { composeSigned, renderOutput, runRenderJob, type ComposeRequest, type RenderJob, type RenderRequest } from './render-jobs.js';
import type { RenderReply } from './render-worker.js';

export interface Renderer {
  /** The rendered output of a message's content; rejects when the content cannot be rendered. */
  render(req: RenderRequest): Promise<ChannelOutput>;
  /** The complete MIME message, DKIM-signed when the request has a key. */
  compose(req: ComposeRequest): Promise<Buffer>;
  /** Stops the threads (jobs still running finish on the event loop). */
  close(): Promise<void>;
}

/** Every job on the event loop (`dispatcher.renderThreads` 0, and tests of single modules). */
export const inlineRenderer: Renderer = {
  render: async (req) => renderOutput(req),
  compose: composeSigned,
  close: async () => {},
};

interface Pending {
  job: RenderJob;
  resolve(value: ChannelOutput | Uint8Array): void;
  reject(err: unknown): void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Jobs not yet posted: a turn's jobs go in one message (a post wakes the thread, which costs more than the copy). */
  outbox: { id: number; job: RenderJob }[];
}

// Starts (or deaths) of threads tolerated before every job stays on the event loop.
const MAX_STARTS_LOST = 3;

/** Starts one render thread (render-worker). */
export function startRenderWorker(): Worker {
  // Built, the thread runs render-worker.js. Under tsx (tests) this module is the .ts source and a
  // worker does not always inherit the TypeScript loader: register tsx in the thread first.
  if (import.meta.url.endsWith('.ts')) {
    const entry = JSON.stringify(new URL('./render-worker.ts', import.meta.url).href);
    return new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${entry}); });`, { eval: true });
  }
  return new Worker(new URL('./render-worker.js', import.meta.url));
}

export interface RendererOptions {
  /** `dispatcher.renderThreads`: 0 keeps every job on the event loop. */
  threads: number;
  log: Logger;
  /** Starts a thread (tests inject one that fails). */
  start?: () => Worker;
}

/** The renderer `dispatcher.renderThreads` asks for. */
export function createRenderer(opts: RendererOptions): Renderer {
  if (opts.threads <= 0) return inlineRenderer;
  const start = opts.start ?? startRenderWorker;
  const threads: (Thread | null)[] = Array.from({ length: opts.threads }, () => null);
  let nextId = 1;
  let lost = 0;
  let closed = false;

  const spawn = (slot: number): Thread => {
    const worker = start();
    worker.unref();
    const t: Thread = { worker, pending: new Map(), outbox: [] };
    worker.on('message', (replies: RenderReply[]) => {
      for (const reply of replies) {
        const p = t.pending.get(reply.id);
        if (!p) continue;
        t.pending.delete(reply.id);
        if (reply.ok) p.resolve(reply.value);
        else p.reject(new Error(reply.error));
      }
      if (t.pending.size === 0) worker.unref();
    });
    let failure: unknown = null;
    worker.on('error', (err) => (failure = err));
    worker.on('exit', (code) => {
      if (threads[slot] === t) threads[slot] = null;
      if (!closed) {
        lost++;
        opts.log.error({ err: failure, code, unfinished: t.pending.size }, lost > MAX_STARTS_LOST ? 'render thread stopped; rendering on the event loop from now on' : 'render thread stopped; its jobs run on the event loop');
      }
      // The jobs are pure: running them again here cannot duplicate anything.
      for (const p of t.pending.values()) runRenderJob(p.job).then(p.resolve, p.reject);
      t.pending.clear();
      t.outbox = [];
    });
    return t;
  };

  const post = (t: Thread) => {
    const jobs = t.outbox;
    t.outbox = [];
    if (jobs.length && threads.includes(t)) t.worker.postMessage(jobs);
  };

  // The thread with the fewest jobs waiting; null when rendering stays on the event loop.
  const pick = (): Thread | null => {
    if (closed || lost > MAX_STARTS_LOST) return null;
    let best: Thread | null = null;
    for (let i = 0; i < threads.length; i++) {
      const t = (threads[i] ??= spawn(i));
      if (!best || t.pending.size < best.pending.size) best = t;
    }
    return best;
  };

  const run = (job: RenderJob): Promise<ChannelOutput | Uint8Array> => {
    const t = pick();
    if (!t) return runRenderJob(job);
    return new Promise((resolve, reject) => {
      const id = nextId++;
      if (t.pending.size === 0) t.worker.ref();
      t.pending.set(id, { job, resolve, reject });
      if (t.outbox.push({ id, job }) === 1) setImmediate(post, t);
    });
  };

  return {
    render: (req) => run({ kind: 'render', req }) as Promise<ChannelOutput>,
    async compose(req) {
      const bytes = (await run({ kind: 'compose', req })) as Uint8Array;
      return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },
    async close() {
      closed = true;
      await Promise.all(threads.map((t) => t?.worker.terminate()));
    },
  };
}
