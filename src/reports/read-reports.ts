// Reading the reports in one mail, as a conversation with whoever stores them: it runs in a report
// thread (report-thread.ts), never on the daemon's event loop, and hands out steps. A DMARC report
// is handed out as its head first, and its records are read only if the answer is 'read' (not a
// duplicate); then in batches, the next read only once the last was taken, so neither side ever
// holds more than a batch of records, and the document is unpacked only as fast as it is stored.
import type * as Mailparser from 'mailparser';
import { lazyRequire } from '../lib/lazy.js';
import { dayRows, type DmarcHead, type DmarcRecord, type DmarcRow } from './dmarc.js';
import { DmarcReader } from './dmarc-reader.js';
import { parseTlsReport, type TlsReport } from './tls.js';
import { openReport, ReportRefused, type RefusalReason } from './unpack.js';

const mailparser = lazyRequire<typeof Mailparser>('mailparser');

export type ReadStep =
  | { step: 'head'; attachment: string | null; head: DmarcHead }
  /** A batch of records, as the rows they are stored as (worked out here, off the event loop). */
  | { step: 'rows'; attachment: string | null; records: number; rows: DmarcRow[] }
  | { step: 'end'; attachment: string | null; partial: boolean }
  | { step: 'tls'; attachment: string | null; report: TlsReport }
  | { step: 'refused'; attachment: string | null; reason: RefusalReason; detail: string };

/** The answer to a head: read its records, or skip them (a duplicate, or one being stored elsewhere). */
export type HeadAnswer = 'read' | 'skip';

export interface ReadLimits {
  /** Records in one report at most (`reports.maxRows`); past it the report is refused. */
  maxRows: number;
  /** Records handed out in one step. */
  batch: number;
}

// Parts that may hold a report: everything but text meant for people.
const isCandidate = (contentType: string, filename: string | undefined) =>
  !/^text\/(plain|html)$/i.test(contentType) || /\.(xml|json|gz|zip)$/i.test(filename ?? '');

/** The steps of reading every report attached to a mail. */
export async function* readReports(raw: Buffer, limits: ReadLimits): AsyncGenerator<ReadStep, void, HeadAnswer | undefined> {
  const parsed = await mailparser().simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true });
  const parts = parsed.attachments.filter((a) => isCandidate(a.contentType, a.filename));
  if (parts.length === 0) {
    yield { step: 'refused', attachment: null, reason: 'not-a-report', detail: 'the mail has no report attached' };
    return;
  }
  for (const part of parts) {
    const attachment = part.filename ?? null;
    const content = part.content;
    part.content = Buffer.alloc(0);
    try {
      const doc = await openReport(content);
      if (doc.format === 'json') {
        const all: Buffer[] = [];
        for await (const piece of doc.pieces) all.push(piece);
        yield { step: 'tls', attachment, report: parseTlsReport(Buffer.concat(all).toString('utf8')) };
      } else {
        yield* readDmarc(doc.pieces, attachment, limits);
      }
    } catch (err) {
      if (!(err instanceof ReportRefused)) throw err;
      yield { step: 'refused', attachment, reason: err.reason, detail: err.message };
    }
  }
}

async function* readDmarc(
  pieces: AsyncGenerator<Buffer>,
  attachment: string | null,
  limits: ReadLimits,
): AsyncGenerator<ReadStep, void, HeadAnswer | undefined> {
  const reader = new DmarcReader();
  const decoder = new TextDecoder('utf-8');
  let headSent = false;
  let pending: DmarcRecord[] = [];
  let rows = 0;
  // Hands out the head once it is read (false: skip the rest), then the records in full batches.
  function* flush(last: boolean): Generator<ReadStep, boolean, HeadAnswer | undefined> {
    if (!headSent && reader.head) {
      headSent = true;
      if ((yield { step: 'head', attachment, head: reader.head }) !== 'read') return false;
      reader.resume();
    }
    const taken = reader.take();
    rows += taken.length;
    if (rows > limits.maxRows) {
      throw new ReportRefused('too-many-rows', `the report holds more than ${limits.maxRows} records (reports.maxRows)`);
    }
    for (const record of taken) pending.push(record);
    while (pending.length >= limits.batch || (last && pending.length > 0)) {
      const records = pending.slice(0, limits.batch);
      pending = pending.slice(records.length);
      yield { step: 'rows', attachment, records: records.length, rows: dayRows(reader.head!, records) };
    }
    return true;
  }
  try {
    for await (const piece of pieces) {
      reader.feed(decoder.decode(piece, { stream: true }));
      if (!(yield* flush(false))) return;
      if (reader.done) break;
    }
    if (!reader.done) {
      reader.feed(decoder.decode());
      reader.end();
    }
    if (!(yield* flush(true))) return;
  } finally {
    await pieces.return(undefined);
  }
  yield { step: 'end', attachment, partial: reader.partial };
}
