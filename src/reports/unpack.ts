// The document inside a report attachment. Receivers send DMARC aggregate reports as zip, gzip or
// plain XML and TLS reports as gzip or plain JSON, and label them loosely (application/octet-stream
// is common), so the container is told by its magic bytes, the label only breaks a tie. Every
// expansion is bounded: a zip bomb or a gzip bomb stops at UNPACKED_LIMIT bytes, a zip with more
// than ZIP_ENTRY_LIMIT entries is refused before any is read, and nothing is written to disk. The
// document is handed out as a stream, so a reader holds a piece of it at a time, never all of it.
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import yauzl from 'yauzl';

/** The most a report may expand to: the largest real aggregate reports are a few MB of XML. */
export const UNPACKED_LIMIT = 32 * 1024 * 1024;
/** A report zip holds one document; a few more entries are tolerated (a README, a signature). */
export const ZIP_ENTRY_LIMIT = 8;

export type RefusalReason = 'too-large' | 'too-many-rows' | 'too-many-entries' | 'corrupt' | 'not-a-report';

/** A report attachment we will not read, and why (logged; the mail is still accepted). */
export class ReportRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'ReportRefused';
  }
}

export interface Unpacked {
  /** xml: a DMARC aggregate report; json: a TLS report. */
  format: 'xml' | 'json';
  text: string;
}

/** A report document as it unpacks: its format, and its bytes a piece at a time. */
export interface OpenedReport {
  format: 'xml' | 'json';
  /** Never more than UNPACKED_LIMIT bytes in all; ReportRefused when there would be. */
  pieces: AsyncGenerator<Buffer>;
}

/** Pieces of a plain document handed out: a reader never holds more than this of it at once. */
const PIECE = 64 * 1024;

const isZip = (b: Buffer) => b.length >= 4 && b.readUInt32LE(0) === 0x04034b50;
const isGzip = (b: Buffer) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;

/** xml or json by the first significant character (after a byte-order mark and white space); undefined: not seen yet. */
function documentFormat(b: Buffer, first: boolean): 'xml' | 'json' | null | undefined {
  let i = first && b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x09 || b[i] === 0x0a || b[i] === 0x0d)) i++;
  if (i === b.length) return undefined;
  if (b[i] === 0x3c) return 'xml';
  if (b[i] === 0x7b) return 'json';
  return null;
}

/** The first .xml or .json entry of a zip, as a stream (its declared size may lie: the budget is counted). */
function unzipFirst(b: Buffer): Promise<{ name: string; stream: Readable; close(): void }> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(b, { lazyEntries: true, validateEntrySizes: true, strictFileNames: false }, (err, zip) => {
      if (err || !zip) return reject(new ReportRefused('corrupt', `not a readable zip (${err?.message ?? 'empty'})`));
      if (zip.entryCount > ZIP_ENTRY_LIMIT) {
        zip.close();
        return reject(new ReportRefused('too-many-entries', `zip holds ${zip.entryCount} entries; at most ${ZIP_ENTRY_LIMIT} are read`));
      }
      let done = false;
      const finish = (fn: () => void) => {
        if (done) return;
        done = true;
        fn();
      };
      zip.on('error', (e: Error) => finish(() => reject(new ReportRefused('corrupt', `zip: ${e.message}`))));
      zip.on('end', () => finish(() => reject(new ReportRefused('not-a-report', 'zip holds no .xml or .json document'))));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (/\/$/.test(entry.fileName) || !/\.(xml|json)$/i.test(entry.fileName)) return zip.readEntry();
        if (entry.uncompressedSize > UNPACKED_LIMIT) {
          zip.close();
          return finish(() => reject(new ReportRefused('too-large', `zip entry ${entry.fileName} declares ${entry.uncompressedSize} bytes`)));
        }
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return finish(() => reject(new ReportRefused('corrupt', `zip entry: ${e?.message ?? 'unreadable'}`)));
          finish(() => resolve({ name: entry.fileName, stream, close: () => zip.close() }));
        });
      });
      zip.readEntry();
    });
  });
}

/** The pieces of a stream, refused past the budget; a stream that fails is a corrupt container. */
async function* bounded(source: AsyncIterable<Buffer>, what: string, cleanup: () => void): AsyncGenerator<Buffer> {
  let size = 0;
  try {
    for await (const piece of source) {
      size += piece.length;
      if (size > UNPACKED_LIMIT) throw new ReportRefused('too-large', `${what} expands beyond ${UNPACKED_LIMIT} bytes`);
      yield piece;
    }
  } catch (err) {
    if (err instanceof ReportRefused) throw err;
    throw new ReportRefused('corrupt', `not a readable ${what} (${(err as Error).message})`);
  } finally {
    cleanup();
  }
}

function* slices(b: Buffer): Generator<Buffer> {
  for (let i = 0; i < b.length; i += PIECE) yield b.subarray(i, i + PIECE);
}

/**
 * The report document in an attachment, whatever the container, opened as a stream: nothing is
 * unpacked beyond what has been read. ReportRefused when there is none or it is not XML or JSON.
 */
export async function openReport(content: Buffer): Promise<OpenedReport> {
  let pieces: AsyncGenerator<Buffer>;
  if (isZip(content)) {
    const entry = await unzipFirst(content);
    pieces = bounded(entry.stream, `zip entry ${entry.name}`, () => {
      entry.stream.destroy();
      entry.close();
    });
  } else if (isGzip(content)) {
    const gunzip = createGunzip();
    gunzip.end(content);
    pieces = bounded(gunzip, 'gzip stream', () => gunzip.destroy());
  } else pieces = bounded(Readable.from(slices(content)), 'document', () => {});
  // The format is told by the first significant byte; the pieces read to find it are handed out again.
  // White space before it means nothing to either format and is not kept.
  const seen: Buffer[] = [];
  let format: 'xml' | 'json' | null | undefined;
  for (let first = true; format === undefined; first = false) {
    const next = await pieces.next();
    if (next.done) break;
    format = documentFormat(next.value, first);
    if (format !== undefined) seen.push(next.value);
  }
  if (!format) {
    await pieces.return(undefined);
    throw new ReportRefused('not-a-report', 'neither XML nor JSON');
  }
  async function* all(): AsyncGenerator<Buffer> {
    try {
      yield* seen.splice(0);
      yield* pieces;
    } finally {
      await pieces.return(undefined);
    }
  }
  return { format, pieces: all() };
}
