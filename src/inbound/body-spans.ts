// A received body stored once. The parsed text (or HTML) of most mail sent as 7bit or 8bit UTF-8 is
// the raw source's own bytes with CRLF line ends; storing it in `parsed` as well would write each
// body twice (the WAL, then the database: four copies of every byte). Where those exact bytes are
// found in the source, `parsed` keeps where they are instead, and the reader cuts them out again.
// Anything else (quoted-printable, base64, another charset, text made from HTML, a bare CR) is
// stored as parsed, so what a client reads never depends on which way a body was kept.
//
// The span is counted from the end of the stored source: the Authentication-Results and Received
// lines are prepended when storing, after analysis, and that does not move it.

import { isUtf8 } from 'node:buffer';
import { findBareLineEnding } from '../lib/line-endings.js';

/** Where a body is in the stored source: `bytes` bytes ending `fromEnd` bytes before its end. */
export interface SourceSpan {
  fromEnd: number;
  bytes: number;
}

/** Bodies shorter than this stay inline: a span saves little and costs the reader the source. */
const MIN_SPAN_BYTES = 1024;

/** Where `body` (as mailparser gives it: LF line ends) lies verbatim in `raw`, or null. */
export function findSpan(raw: Buffer, body: string): SourceSpan | null {
  if (body.length < MIN_SPAN_BYTES || body.includes('\r') || !wellFormed(body)) return null;
  const bytes = Buffer.from(body.replaceAll('\n', '\r\n'), 'utf8');
  const at = raw.indexOf(bytes);
  return at === -1 ? null : { fromEnd: raw.length - at, bytes: bytes.length };
}

/**
 * The span of everything from `start` to the end of `raw`, when `text` was decoded from exactly
 * those bytes as UTF-8 with CRLF made LF (a single plain text part: plain-text.ts). It is the same
 * answer as findSpan's without searching: the bytes read back as the text when they are valid UTF-8
 * and every CR and LF in them is a CRLF pair.
 */
export function tailSpan(raw: Buffer, start: number, text: string): SourceSpan | null {
  if (text.length < MIN_SPAN_BYTES) return null;
  const body = raw.subarray(start);
  if (!isUtf8(body) || findBareLineEnding(body) !== -1) return null;
  return { fromEnd: body.length, bytes: body.length };
}

// A lone surrogate would not survive UTF-8 and back. (String.prototype.isWellFormed is in Node 20
// but not in the ES2023 library the project is typed against.)
const wellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/** The body a span names, as it was parsed. */
export function readSpan(source: Uint8Array, span: SourceSpan): string {
  const start = source.length - span.fromEnd;
  if (!Number.isInteger(start) || start < 0 || span.bytes > span.fromEnd) throw new Error('a body span lies outside its source');
  return Buffer.from(source.buffer, source.byteOffset + start, span.bytes)
    .toString('utf8')
    .replaceAll('\r\n', '\n');
}
