// A render thread (see render-threads.ts): runs the render jobs it is sent and the calls of the
// SMTP pools it hosts (pool-wire.ts), and answers each with its result or its error. Answers
// ready in the same turn go back in one message, and built messages go by transfer, not by copy,
// when they own their memory.
import { parentPort } from 'node:worker_threads';
import type { ChannelOutput } from '../templates/render.js';
import {
  createPoolHost,
  errorToWire,
  type PoolCall,
  type PoolLogLine,
  type WireError,
  type WireSendResult,
} from './channels/email/pool-wire.js';
import { runRenderJob, type RenderJob } from './render-jobs.js';

export type ThreadRequest = { id: number; job: RenderJob } | { id: number; pool: PoolCall };

export type ThreadValue = ChannelOutput | Uint8Array | WireSendResult | null;

export type ThreadReply = { id: number; ok: true; value: ThreadValue } | { id: number; ok: false; error: WireError };

/** What the thread sends: answers, or a log line of a hosted pool. */
export type ThreadMessage = { replies: ThreadReply[] } | { log: PoolLogLine };

const port = parentPort!;
const host = createPoolHost((log) => port.postMessage({ log } satisfies ThreadMessage));

let replies: ThreadReply[] = [];
let transfer: ArrayBuffer[] = [];

function flush(): void {
  port.postMessage({ replies } satisfies ThreadMessage, transfer);
  replies = [];
  transfer = [];
}

function answer(reply: ThreadReply): void {
  const v = 'value' in reply ? reply.value : null;
  if (v instanceof Uint8Array && v.byteOffset === 0 && v.byteLength === v.buffer.byteLength) transfer.push(v.buffer as ArrayBuffer);
  if (replies.push(reply) === 1) setImmediate(flush);
}

port.on('message', (requests: ThreadRequest[]) => {
  for (const r of requests) {
    const work: Promise<ThreadValue> = 'job' in r ? runRenderJob(r.job) : host.call(r.pool);
    work.then(
      (value) => answer({ id: r.id, ok: true, value }),
      (err: unknown) => answer({ id: r.id, ok: false, error: errorToWire(err) }),
    );
  }
});
