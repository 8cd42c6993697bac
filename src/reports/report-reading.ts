// Where the reports of a mail are read: in a thread of their own (report-thread.ts), so a report of
// tens of MB never stops the event loop that speaks SMTP and HTTP and delivers mail. One thread per
// mail, ended when the mail is read: reports arrive a few times a day, and a thread that is gone
// holds no memory. One mail is read at a time; the others wait their turn (their senders wait for
// the reply to DATA, which is sent once the report is stored).
import type { ResourceLimits } from 'node:worker_threads';
import { startThread } from '../lib/threads.js';
import type { HeadAnswer, ReadLimits, ReadStep } from './read-reports.js';
import type { ReportThreadData, ReportThreadReply } from './report-thread.js';

/** Reads every report in a mail, giving each step to `onStep` and its answer back to the reader. */
export type ReadMail = (raw: Buffer, onStep: (step: ReadStep) => Promise<HeadAnswer | void>) => Promise<void>;

// A thread reads one document a piece at a time: a small young generation is enough, and keeps
// what it allocates from growing the process for long.
const LIMITS: ResourceLimits = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 256 };

export function createReportReading(limits: ReadLimits): ReadMail {
  let turn: Promise<unknown> = Promise.resolve();
  return (raw, onStep) => {
    const run = turn.then(() => converse(raw, limits, onStep));
    turn = run.catch(() => {});
    return run;
  };
}

async function converse(raw: Buffer, limits: ReadLimits, onStep: (step: ReadStep) => Promise<HeadAnswer | void>): Promise<void> {
  const data: ReportThreadData = { raw, ...limits };
  const worker = startThread(import.meta.url, 'report-thread', data, LIMITS);
  try {
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (reply: ReportThreadReply) => {
        if ('done' in reply) return resolve();
        if ('error' in reply) return reject(new Error(`reading a report failed: ${reply.error}`));
        onStep(reply.value as ReadStep).then((answer) => worker.postMessage(answer ?? null), reject);
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the report thread stopped (exit code ${code})`)));
      worker.postMessage(null);
    });
  } finally {
    worker.removeAllListeners('exit');
    await worker.terminate();
  }
}
