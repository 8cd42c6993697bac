// The document inside a report attachment. Receivers send DMARC aggregate reports as zip, gzip or
// plain XML and TLS reports as gzip or plain JSON, and label them loosely (application/octet-stream
// is common), so the container is told by its magic bytes, the label only breaks a tie. Every
// expansion is bounded: a zip bomb or a gzip bomb stops at UNPACKED_LIMIT bytes, a zip with more
// than ZIP_ENTRY_LIMIT entries is refused before any is read, and nothing is written to disk.
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import yauzl from 'yauzl';

/** The most a report may expand to: the largest real aggregate reports are a few MB of XML. */
export const UNPACKED_LIMIT = 32 * 1024 * 1024;
/** A report zip holds one document; a few more entries are tolerated (a README, a signature). */
export const ZIP_ENTRY_LIMIT = 8;

export type RefusalReason = 'too-large' | 'too-many-entries' | 'corrupt' | 'not-a-report';

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

const gunzipAsync = promisify(gunzip) as (buf: Buffer, opts: { maxOutputLength: number }) => Promise<Buffer>;

const isZip = (b: Buffer) => b.length >= 4 && b.readUInt32LE(0) === 0x04034b50;
const isGzip = (b: Buffer) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;

/** xml or json by the first significant character (after a byte-order mark and white space). */
function documentFormat(b: Buffer): 'xml' | 'json' | null {
  let i = b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf ? 3 : 0;
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x09 || b[i] === 0x0a || b[i] === 0x0d)) i++;
  if (b[i] === 0x3c) return 'xml';
  if (b[i] === 0x7b) return 'json';
  return null;
}

async function ungzip(b: Buffer): Promise<Buffer> {
  try {
    return await gunzipAsync(b, { maxOutputLength: UNPACKED_LIMIT });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new ReportRefused('too-large', `gzip expands beyond ${UNPACKED_LIMIT} bytes`);
    }
    throw new ReportRefused('corrupt', `not a readable gzip stream (${(err as Error).message})`);
  }
}

/** The first .xml or .json entry of a zip, read with a byte budget (declared sizes may lie). */
function unzipFirst(b: Buffer): Promise<Buffer> {
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
        zip.close();
        fn();
      };
      zip.on('error', (e: Error) => finish(() => reject(new ReportRefused('corrupt', `zip: ${e.message}`))));
      zip.on('end', () => finish(() => reject(new ReportRefused('not-a-report', 'zip holds no .xml or .json document'))));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (/\/$/.test(entry.fileName) || !/\.(xml|json)$/i.test(entry.fileName)) return zip.readEntry();
        if (entry.uncompressedSize > UNPACKED_LIMIT) {
          return finish(() => reject(new ReportRefused('too-large', `zip entry ${entry.fileName} declares ${entry.uncompressedSize} bytes`)));
        }
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return finish(() => reject(new ReportRefused('corrupt', `zip entry: ${e?.message ?? 'unreadable'}`)));
          const chunks: Buffer[] = [];
          let size = 0;
          stream.on('data', (c: Buffer) => {
            size += c.length;
            if (size > UNPACKED_LIMIT) {
              stream.destroy();
              finish(() => reject(new ReportRefused('too-large', `zip entry ${entry.fileName} expands beyond ${UNPACKED_LIMIT} bytes`)));
            } else chunks.push(c);
          });
          stream.on('error', (se: Error) => finish(() => reject(new ReportRefused('corrupt', `zip entry: ${se.message}`))));
          stream.on('end', () => finish(() => resolve(Buffer.concat(chunks))));
        });
      });
      zip.readEntry();
    });
  });
}

/** The report document in an attachment, whatever the container; ReportRefused when there is none. */
export async function unpackReport(content: Buffer): Promise<Unpacked> {
  let doc = content;
  if (isZip(content)) doc = await unzipFirst(content);
  else if (isGzip(content)) doc = await ungzip(content);
  if (doc.length > UNPACKED_LIMIT) throw new ReportRefused('too-large', `document of ${doc.length} bytes`);
  const format = documentFormat(doc);
  if (!format) throw new ReportRefused('not-a-report', 'neither XML nor JSON');
  return { format, text: doc.toString('utf8') };
}
