// A render thread (see render-threads.ts): runs each batch of render jobs it is sent and answers
// the batch in one message, each job with its result or its error's message. Built messages go
// back by transfer, not by copy, when they own their memory.
import { parentPort } from 'node:worker_threads';
import type { ChannelOutput } from '../templates/render.js';
import { runRenderJob, type RenderJob } from './render-jobs.js';

export type RenderReply = { id: number; ok: true; value: ChannelOutput | Uint8Array } | { id: number; ok: false; error: string };

const port = parentPort!;

port.on('message', async (jobs: { id: number; job: RenderJob }[]) => {
  const transfer: ArrayBuffer[] = [];
  const replies = await Promise.all(
    jobs.map(({ id, job }) =>
      runRenderJob(job).then(
        (value): RenderReply => {
          if (value instanceof Uint8Array && value.byteOffset === 0 && value.byteLength === value.buffer.byteLength) transfer.push(value.buffer as ArrayBuffer);
          return { id, ok: true, value };
        },
        (err: unknown): RenderReply => ({ id, ok: false, error: err instanceof Error ? err.message : String(err) }),
      ),
    ),
  );
  port.postMessage(replies, transfer);
});
