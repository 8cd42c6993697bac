// SMTP's transparency (RFC 5321 §4.5.2): a line of the message that starts with a dot gets another
// one, and nodemailer's client also turns a bare LF into CRLF. Its DataStream does both by looking
// at every byte in JavaScript (smtp-connection/data-stream.js), 4 % of the CPU of a message with an
// 80 KiB attachment. dotStuffed does the same work from line end to line end (Buffer.indexOf, a
// memchr), and fastDotStuffing puts it in DataStream's place, keeping its counts and its last byte.
// This is the one place that reaches into nodemailer's SMTP client; its oracle is that DataStream
// itself, over generated messages cut into generated chunks (test/channels/email/dot-stuffing.test.ts).
import { createRequire } from 'node:module';
import type { Transform, TransformCallback } from 'node:stream';

const require = createRequire(import.meta.url);

const DOT = Buffer.from('.');
const CRLF = Buffer.from('\r\n');

/**
 * A chunk of the message as DataStream sends it, after `lastByte` (the previous chunk's last byte,
 * or false before the first): a dot that starts a line doubled, a bare LF made CRLF. The chunk
 * itself when nothing changes. A NUL before the chunk counts as a line start, as DataStream has it.
 */
export function dotStuffed(chunk: Buffer, lastByte: number | false): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  let length = 0;
  const take = (end: number, extra: Buffer) => {
    parts.push(chunk.subarray(from, end), extra);
    length += end - from + extra.length;
    from = end;
  };
  if (chunk[0] === 0x2e && (!lastByte || lastByte === 0x0a)) take(1, DOT);
  for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) {
    if (i > 0 ? chunk[i - 1] !== 0x0d : lastByte !== 0x0d) {
      take(i, CRLF);
      from = i + 1;
    }
    if (chunk[i + 1] === 0x2e) take(i + 2, DOT);
  }
  if (parts.length === 0) return chunk;
  parts.push(chunk.subarray(from));
  return Buffer.concat(parts, length + chunk.length - from);
}

interface DataStream extends Transform {
  inByteCount: number;
  outByteCount: number;
  lastByte: number | false;
}

let installed = false;

/** DataStream's transform replaced by dotStuffed, once per thread (each thread loads its own nodemailer). */
export function fastDotStuffing(): void {
  if (installed) return;
  installed = true;
  const DataStream = require('nodemailer/lib/smtp-connection/data-stream.js') as { prototype: DataStream };
  DataStream.prototype._transform = function (
    this: DataStream,
    chunk: Buffer | string,
    _encoding: BufferEncoding,
    done: TransformCallback,
  ) {
    if (!chunk || !chunk.length) return done();
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.inByteCount += bytes.length;
    const out = dotStuffed(bytes, this.lastByte);
    this.outByteCount += out.length;
    this.push(out);
    this.lastByte = bytes[bytes.length - 1];
    done();
  };
}
