// Delivery work off the event loop. The dispatcher's pure CPU work — Mustache, deriving the text
// part from html (html-to-text), building the MIME message (MailComposer) and signing it (DKIM) —
// took about a seventh of a busy daemon's event loop (`npm run bench delivery` profile), and
// speaking SMTP to the remote servers (nodemailer's client: commands, replies, dot-stuffing the
// message onto the socket) most of another tenth: time in which the loop could neither accept
// sends nor commit. `dispatcher.renderThreads` worker threads (default 1) run render jobs
// (render-jobs.ts) and host the direct-delivery SMTP pool (pool-wire.ts); the loop keeps the
// database, the queue and every decision. 0 keeps all of it on the event loop.
//
// Render jobs are pure (data in, data out), so nothing is lost if a thread dies: its unfinished
// jobs run again on the event loop. Its SMTP transactions in progress fail as a dropped
// connection would (temporary: the dispatcher retries them, at least once as always). A new
// thread is started for the next call; after a few deaths every job and pool stays on the event
// loop, with an error in the log. Threads start on first use (a daemon that never sends email
// never starts one) and keep the process alive only while they have work.
import type { Worker } from 'node:worker_threads';
import { asBuffer, startThread } from '../lib/thread.js';
import type { Logger } from '../lib/logger.js';
import type { ChannelOutput } from '../templates/render.js';
import { errorFromWire, resultFromWire, type PoolCall, type PoolSpec, type WireSendResult } from './channels/email/pool-wire.js';
import { createSmtpPool, type PoolOptions, type SmtpError, type SmtpPool } from './channels/email/smtp-pool.js';
import { composeSigned, renderOutput, runRenderJob, type ComposeRequest, type RenderJob, type RenderRequest } from './render-jobs.js';
import type { ThreadMessage, ThreadRequest, ThreadValue } from './render-worker.js';

export interface Renderer {
  /** The rendered output of a message's content; rejects when the content cannot be rendered. */
  render(req: RenderRequest): Promise<ChannelOutput>;
  /** The complete MIME message, DKIM-signed when the request has a key. */
  compose(req: ComposeRequest): Promise<Buffer>;
  /** An SMTP pool with these settings, hosted on a render thread when there is one. */
  smtpPool(opts: PoolOptions): SmtpPool;
  /** Stops the threads (render jobs still running finish on the event loop). */
  close(): Promise<void>;
}

/** Everything on the event loop (`dispatcher.renderThreads` 0, and tests of single modules). */
export const inlineRenderer: Renderer = {
  render: async (req) => renderOutput(req),
  compose: composeSigned,
  smtpPool: createSmtpPool,
  close: async () => {},
};

// A pool call without the pool's id and settings (added when it is sent).
type PoolOp = PoolCall extends infer C ? (C extends PoolCall ? Omit<C, 'pool' | 'spec'> : never) : never;

type Value = ThreadValue;

interface Pending {
  request: ThreadRequest;
  resolve(value: Value): void;
  reject(err: unknown): void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Requests not yet posted: a turn's go in one message (a post wakes the thread, which costs more than the copy). */
  outbox: ThreadRequest[];
}

// Starts (or deaths) of threads tolerated before everything stays on the event loop.
const MAX_STARTS_LOST = 3;

/** Starts one render thread (render-worker). */
export const startRenderWorker = (): Worker => startThread(import.meta.url, 'render-worker', undefined);

export interface RendererOptions {
  /** `dispatcher.renderThreads`: 0 keeps everything on the event loop. */
  threads: number;
  log: Logger;
  /** Starts a thread (tests inject one that fails). */
  start?: () => Worker;
}

const threadStopped = (): SmtpError =>
  Object.assign(new Error('the render thread holding the connection stopped'), { code: 'ECONNECTION' });

/** The renderer `dispatcher.renderThreads` asks for. */
export function createRenderer(opts: RendererOptions): Renderer {
  if (opts.threads <= 0) return inlineRenderer;
  const start = opts.start ?? startRenderWorker;
  const threads: (Thread | null)[] = Array.from({ length: opts.threads }, () => null);
  let nextId = 1;
  let nextPool = 0;
  let lost = 0;
  let closed = false;
  const inline = () => closed || lost > MAX_STARTS_LOST;

  const spawn = (slot: number): Thread => {
    const worker = start();
    worker.unref();
    const t: Thread = { worker, pending: new Map(), outbox: [] };
    worker.on('message', (msg: ThreadMessage) => {
      if ('log' in msg) return opts.log.debug(msg.log.obj, msg.log.msg);
      for (const reply of msg.replies) {
        const p = t.pending.get(reply.id);
        if (!p) continue;
        t.pending.delete(reply.id);
        if (reply.ok) p.resolve(reply.value);
        else p.reject(errorFromWire(reply.error));
      }
      if (t.pending.size === 0) worker.unref();
    });
    let failure: unknown = null;
    worker.on('error', (err) => (failure = err));
    worker.on('exit', (code) => {
      if (threads[slot] === t) threads[slot] = null;
      if (!closed) {
        lost++;
        opts.log.error(
          { err: failure, code, unfinished: t.pending.size },
          lost > MAX_STARTS_LOST
            ? 'render thread stopped; rendering on the event loop from now on'
            : 'render thread stopped; its jobs run on the event loop',
        );
      }
      for (const p of t.pending.values()) {
        // Render jobs are pure: running them again here cannot duplicate anything.
        if ('job' in p.request) runRenderJob(p.request.job).then(p.resolve, p.reject);
        else p.reject(threadStopped());
      }
      t.pending.clear();
      t.outbox = [];
    });
    return t;
  };

  const threadAt = (slot: number): Thread => (threads[slot] ??= spawn(slot));

  // The thread with the fewest requests waiting.
  const leastBusy = (): Thread => {
    let best = threadAt(0);
    for (let i = 1; i < threads.length; i++) if (threadAt(i).pending.size < best.pending.size) best = threadAt(i);
    return best;
  };

  const post = (t: Thread) => {
    const requests = t.outbox;
    t.outbox = [];
    if (requests.length && threads.includes(t)) t.worker.postMessage(requests);
  };

  const send = (t: Thread, make: (id: number) => ThreadRequest): Promise<Value> =>
    new Promise((resolve, reject) => {
      const request = make(nextId++);
      if (t.pending.size === 0) t.worker.ref();
      t.pending.set(request.id, { request, resolve, reject });
      if (t.outbox.push(request) === 1) setImmediate(post, t);
    });

  const run = (job: RenderJob): Promise<Value> => (inline() ? runRenderJob(job) : send(leastBusy(), (id) => ({ id, job })));

  return {
    render: (req) => run({ kind: 'render', req }) as Promise<ChannelOutput>,
    async compose(req) {
      return asBuffer((await run({ kind: 'compose', req })) as Uint8Array);
    },
    smtpPool(poolOpts) {
      // A pool lives on one thread (its connections are there); pools are spread over the threads.
      const id = nextPool++;
      const slot = id % threads.length;
      const { log, ...settings } = poolOpts;
      const spec: PoolSpec = { ...settings, debug: log.isLevelEnabled('debug') };
      let local: SmtpPool | null = null;
      const call = (c: PoolOp) => send(threadAt(slot), (rid) => ({ id: rid, pool: { ...c, pool: id, spec } as PoolCall }));
      return {
        async send(target, envelope, raw) {
          if (inline()) return (local ??= createSmtpPool(poolOpts)).send(target, envelope, raw);
          return resultFromWire((await call({ op: 'send', target, envelope, raw })) as WireSendResult);
        },
        // The hosted pool's counts are the thread's; this side only knows its own fallback's.
        stats: () => local?.stats() ?? { open: 0, waiting: 0 },
        async close() {
          await local?.close();
          if (!inline() && threads[slot]) await call({ op: 'close' });
        },
      };
    },
    async close() {
      closed = true;
      await Promise.all(threads.map((t) => t?.worker.terminate()));
    },
  };
}
