// smtp-server reads a message's DATA by looking at every byte in JavaScript for a dot that begins a
// line (the end of the message, or a dot-stuffed line): on 1 MiB messages that loop was an eighth
// of the event loop's time. This is the same method with that search done by Buffer.indexOf
// (memchr) for each LF and dot; everything else (what is written to the message stream and when,
// the byte count, where the message ends, what is left for the next command) is smtp-server's, in
// the same order. It is put in place only over the version of the method it was written from:
// after an upgrade of smtp-server that changed it, smtp-server's own runs until this is redone.
// test/smtp/data-stream.test.ts holds the two side by side on generated messages cut at
// generated places.
import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import { SMTPStream } from 'smtp-server/lib/smtp-stream';

/** The parts of smtp-server's SMTPStream this method reads and calls. */
export interface DataStreamState {
  _dataStream: Writable;
  _lastBytes: Buffer | false;
  _atDataStart: boolean;
  _countDataBytes(length: number): void;
  _endDataMode(chunk: Buffer | false, remainder: Buffer, done: () => void): void;
  _feedDataStream: (this: DataStreamState, chunk: Buffer, done: () => void) => void;
}

const LF_DOT = Buffer.from('\n.');
const CR = 0x0d;
const LF = 0x0a;
const DOT = 0x2e;

/** smtp-server's SMTPStream.prototype._feedDataStream, finding each line-starting dot with indexOf. */
export function feedDataStream(this: DataStreamState, input: Buffer, done: () => void): void {
  const dataStream = this._dataStream;
  let chunk = input;
  if (this._lastBytes && this._lastBytes.length) {
    chunk = Buffer.concat([this._lastBytes, chunk], this._lastBytes.length + chunk.length);
    this._lastBytes = false;
  }
  let len = chunk.length;
  // A message that is only the terminator, at the very start of the data (see smtp-server's note:
  // a leading dot already unstuffed is content).
  if (this._atDataStart && len >= 3 && chunk[0] === DOT && chunk[1] === CR && chunk[2] === LF) {
    this._endDataMode(false, chunk.subarray(3), done);
    return;
  }
  if (this._atDataStart && len >= 2 && chunk[0] === DOT && chunk[1] === DOT) {
    chunk = chunk.subarray(1);
    len--;
    this._atDataStart = false;
  }
  // Each dot at i that follows an LF, for 2 <= i < len - 2 as smtp-server's loop has it.
  for (let lf = chunk.indexOf(LF_DOT, 1); lf !== -1 && lf + 1 < len - 2; lf = chunk.indexOf(LF_DOT, lf + 2)) {
    const i = lf + 1;
    if (chunk[i - 2] === CR && chunk[i + 1] === CR && chunk[i + 2] === LF) {
      // CRLF . CRLF: the message ends; its last CRLF is content.
      const body = chunk.subarray(0, i);
      this._countDataBytes(body.length);
      this._endDataMode(body, chunk.subarray(i + 3), done);
      return;
    }
    if (chunk[i + 1] === DOT) {
      // A stuffed dot: what came before goes out, the rest is read again without the dot.
      const before = chunk.subarray(0, i);
      this._lastBytes = false;
      this._countDataBytes(before.length);
      if (dataStream.writable) dataStream.write(before);
      const rest = chunk.subarray(i + 1);
      setImmediate(() => this._feedDataStream(rest, done));
      return;
    }
  }
  // The last four bytes wait for the next chunk: the terminator may straddle the two.
  this._lastBytes = chunk.length < 4 ? chunk : chunk.subarray(chunk.length - 4);
  if (this._lastBytes.length >= chunk.length) {
    done();
    return;
  }
  const out = chunk.subarray(0, chunk.length - this._lastBytes.length);
  this._countDataBytes(out.length);
  if (!dataStream.writable) {
    done();
    return;
  }
  const handled = dataStream.write(out);
  if (handled || dataStream.destroyed) {
    done();
    return;
  }
  // A stream that the application destroys never drains, it only closes.
  const onDrain = () => {
    dataStream.removeListener('drain', onDrain);
    dataStream.removeListener('close', onDrain);
    done();
  };
  dataStream.once('drain', onDrain);
  dataStream.once('close', onDrain);
}

/** The SHA-256 of the source of the smtp-server method above was written from (3.21.6). */
const WRITTEN_FROM = '9d8b903f9a3a63542d72e19a9e2f67009a3b1107a28d57e8e7369355454ff230';

const prototype = SMTPStream.prototype as unknown as DataStreamState;
/** smtp-server's own method, kept for the test. */
export const ownFeedDataStream = prototype._feedDataStream;

/** The SHA-256 of a function's source. */
const sourceHash = (fn: (...args: never[]) => unknown): string => createHash('sha256').update(fn.toString()).digest('hex');

let installed: boolean | null = null;

/** Puts feedDataStream in smtp-server's place when its own is the one it was written from; whether it did. */
export function installDataStream(): boolean {
  if (installed !== null) return installed;
  installed = sourceHash(ownFeedDataStream) === WRITTEN_FROM;
  if (installed) prototype._feedDataStream = feedDataStream;
  return installed;
}
