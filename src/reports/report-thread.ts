// A report thread: reads the reports of one mail (read-reports.ts) off the daemon's event loop,
// one step per request, and stops being useful once the conversation is done (report-reading.ts
// ends it then, so its memory goes back to the system with it).
import { parentPort, workerData } from 'node:worker_threads';
import { asBuffer } from '../lib/threads.js';
import { readReports, type HeadAnswer, type ReadLimits } from './read-reports.js';

export interface ReportThreadData extends ReadLimits {
  raw: Uint8Array;
}

/** What the thread answers each request with: the next step, the end, or an unexpected error. */
export type ReportThreadReply = { value: unknown } | { done: true } | { error: string };

const { raw, ...limits } = workerData as ReportThreadData;
const steps = readReports(asBuffer(raw), limits);
const port = parentPort!;

port.on('message', (answer: HeadAnswer | null) => {
  steps.next(answer ?? undefined).then(
    (r) => port.postMessage((r.done ? { done: true } : { value: r.value }) satisfies ReportThreadReply),
    (err: unknown) => port.postMessage({ error: err instanceof Error ? err.message : String(err) } satisfies ReportThreadReply),
  );
});
