// A render thread (see render-threads.ts): runs render jobs as they arrive and answers each with
// its result or its error's message. A built message goes back by transfer, not by copy, when it
// owns its memory.
import { parentPort } from 'node:worker_threads';
import type { ChannelOutput } from '../templates/render.js';
import { runRenderJob, type RenderJob } from './render-jobs.js';

export type RenderReply = { id: number; ok: true; value: ChannelOutput | Uint8Array } | { id: number; ok: false; error: string };

const port = parentPort!;

port.on('message', (msg: { id: number; job: RenderJob }) => {
  runRenderJob(msg.job).then(
    (value) => {
      const owned = value instanceof Uint8Array && value.byteOffset === 0 && value.byteLength === value.buffer.byteLength;
      port.postMessage({ id: msg.id, ok: true, value } satisfies RenderReply, owned ? [value.buffer as ArrayBuffer] : []);
    },
    (err: unknown) => port.postMessage({ id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err) } satisfies RenderReply),
  );
});
