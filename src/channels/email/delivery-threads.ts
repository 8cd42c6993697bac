// Delivery work off the event loop, email's above all. The dispatcher's pure CPU work — Mustache, deriving the text
// part from html (html-to-text), building the MIME message (MailComposer) and signing it (DKIM) —
// took about a seventh of a busy daemon's event loop (`npm run bench delivery` profile), and
// speaking SMTP to the remote servers (nodemailer's client: commands, replies, dot-stuffing the
// message onto the socket) most of another tenth: time in which the loop could neither accept
// sends nor commit. `dispatcher.renderThreads` delivery threads (default 1, lib/threads.ts) render
// messages, compose and sign email, and host the email channel's direct-delivery SMTP pools
// (pool-wire.ts); the loop keeps the database, the queue and every decision. 0 keeps all of it on
// the event loop. They live with email because email is what needs them (compose, DKIM, SMTP);
// the dispatcher sees only their `render` (outbound's Renderer), which serves every channel.
//
// Render and compose jobs are pure (data in, data out), so nothing is lost if a thread dies: its
// unfinished jobs run again on the event loop. Its SMTP transactions in progress fail as a dropped
// connection would (temporary: the dispatcher retries them, at least once as always). A new thread
// is started for the next call; after a few deaths every job and pool stays on the event loop,
// with an error in the log. Threads start on first use (a daemon that never sends never starts one).
import type { Worker } from 'node:worker_threads';
import { composeSigned, type ComposeRequest } from './compose.js';
import { errorFromWire, resultFromWire, type PoolCall, type PoolSpec, type WireError, type WireSendResult } from './pool-wire.js';
import { createSmtpPool, type PoolOptions, type SmtpError, type SmtpPool } from './smtp-pool.js';
import { asBuffer, createThreadPool, startThread } from '../../lib/threads.js';
import type { Logger } from '../../lib/logger.js';
import { renderOutput, type RenderRequest } from '../render.js';
import type { ChannelOutput } from '../../contract/channels.js';

/** What a delivery thread is asked to do. */
export type DeliveryJob =
  { kind: 'render'; req: RenderRequest } | { kind: 'compose'; req: ComposeRequest } | { kind: 'pool'; call: PoolCall };

export interface DeliveryThreads {
  /** The rendered output of a message's content; rejects when the content cannot be rendered. */
  render(req: RenderRequest): Promise<ChannelOutput>;
  /** The complete MIME message, DKIM-signed when the request has a key. */
  compose(req: ComposeRequest): Promise<Buffer>;
  /** An SMTP pool with these settings, hosted on a delivery thread when there is one. */
  smtpPool(opts: PoolOptions): SmtpPool;
  /** Stops the threads (jobs still running finish on the event loop). */
  close(): Promise<void>;
}

/** Everything on the event loop (`dispatcher.renderThreads` 0, and tests of single modules). */
export const onEventLoop: DeliveryThreads = {
  render: (req) => Promise.resolve().then(() => renderOutput(req)),
  compose: composeSigned,
  smtpPool: createSmtpPool,
  close: async () => {},
};

/** Runs a render or compose job here, on the event loop. */
export async function runJob(job: DeliveryJob): Promise<unknown> {
  if (job.kind === 'render') return renderOutput(job.req);
  if (job.kind === 'compose') return composeSigned(job.req);
  throw new Error('an SMTP pool call cannot run away from its thread');
}

// A pool call without the pool's id and settings (added when it is sent).
type PoolOp = PoolCall extends infer C ? (C extends PoolCall ? Omit<C, 'pool' | 'spec'> : never) : never;

// Starts (or deaths) of threads tolerated before everything stays on the event loop.
const MAX_STARTS_LOST = 3;

export interface DeliveryThreadsOptions {
  /** `dispatcher.renderThreads`: 0 keeps everything on the event loop. */
  threads: number;
  log: Logger;
  /** Starts a thread (tests inject one that fails). */
  start?: () => Worker;
}

/** Starts one delivery thread (delivery-thread.ts). */
const startDeliveryThread = (): Worker => startThread(import.meta.url, 'delivery-thread', undefined);

const threadStopped = (): SmtpError =>
  Object.assign(new Error('the delivery thread holding the connection stopped'), { code: 'ECONNECTION' });

/** The delivery threads `dispatcher.renderThreads` asks for. */
export function createDeliveryThreads(opts: DeliveryThreadsOptions): DeliveryThreads {
  if (opts.threads <= 0) return onEventLoop;
  const pool = createThreadPool<DeliveryJob, unknown>({
    size: opts.threads,
    start: opts.start ?? startDeliveryThread,
    decodeError: (wire) => errorFromWire(wire as WireError),
    onLog: (line) => opts.log.debug(line.obj, line.msg),
    onExit(unfinished, { err, code }) {
      if (!pool.closed) {
        const fallback = pool.lost > MAX_STARTS_LOST;
        opts.log.error(
          { err, code, unfinished: unfinished.length },
          fallback
            ? 'delivery thread stopped; delivery work stays on the event loop from now on'
            : 'delivery thread stopped; its jobs run on the event loop',
        );
      }
      for (const u of unfinished) {
        // Render and compose jobs are pure: running them again here cannot duplicate anything.
        if (u.req.kind === 'pool') u.reject(threadStopped());
        else runJob(u.req).then(u.resolve, u.reject);
      }
    },
  });
  let nextPool = 0;
  const inline = () => pool.closed || pool.lost > MAX_STARTS_LOST;
  const run = (job: DeliveryJob): Promise<unknown> => (inline() ? runJob(job) : pool.call(job));

  return {
    render: (req) => run({ kind: 'render', req }) as Promise<ChannelOutput>,
    async compose(req) {
      return asBuffer((await run({ kind: 'compose', req })) as Uint8Array);
    },
    smtpPool(poolOpts) {
      // A pool lives on one thread (its connections are there); pools are spread over the threads.
      const id = nextPool++;
      const slot = id % opts.threads;
      const { log, ...settings } = poolOpts;
      const spec: PoolSpec = { ...settings, debug: log.isLevelEnabled('debug') };
      let local: SmtpPool | null = null;
      const call = (c: PoolOp) => pool.call({ kind: 'pool', call: { ...c, pool: id, spec } }, slot);
      return {
        async send(target, envelope, raw) {
          if (inline()) return (local ??= createSmtpPool(poolOpts)).send(target, envelope, raw);
          return resultFromWire((await call({ op: 'send', target, envelope, raw })) as WireSendResult);
        },
        // The hosted pool's counts are the thread's; this side only knows its own fallback's.
        stats: () => local?.stats() ?? { open: 0, waiting: 0 },
        async close() {
          await local?.close();
          if (!inline() && pool.running(slot)) await call({ op: 'close' });
        },
      };
    },
    close: () => pool.close(),
  };
}
