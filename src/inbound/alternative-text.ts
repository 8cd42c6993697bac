// multipart/alternative mail (a text and an HTML version of one message: what mail clients send)
// parsed without mailparser walking its bodies byte by byte. Each text part that mailparser would
// hand over undecoded (text/plain or text/html in UTF-8 or ASCII, not quoted-printable or base64,
// no disposition) has its body replaced by a unique token; mailparser parses that skeleton (every
// header, the structure, any other part as it is); then each token in its text and HTML is
// replaced by the body it stands for, decoded as mailparser decodes it (UTF-8, CRLF made LF).
//
// In an alternative, mailparser puts a text/plain part's content into the text and a text/html
// part's into the HTML as they are, so a token stands exactly where its body would. The skeleton is
// used only when the message has one level of parts, every line that begins with the delimiter is
// a delimiter exactly, and mailparser's parse of the skeleton names the same boundary and gives back
// every token once in its text or HTML; anything else is parsed whole.
// test/inbound/alternative-text.test.ts holds the result to mailparser's own.
import { randomBytes } from 'node:crypto';
import type { ParsedMail } from 'mailparser';
import { findBareLineEnding } from '../lib/line-endings.js';
import { bodyStart, decodedText, UNDECODED_ENCODING, undecodedCharset } from './plain-text.js';

export interface Skeleton {
  /** The message with each replaced body as its token. */
  bytes: Buffer;
  boundary: string;
  /** Each replaced body: its token and where its bytes are in the source. */
  bodies: { token: string; start: number; end: number }[];
}

/**
 * The unfolded lines of a header block, as `[lowercased name, value]`; none when a line end in it
 * is not a CRLF (mailparser also ends a line at a bare LF, so a field after one would be read here
 * as part of the value before it).
 */
export function headerFields(raw: Buffer, start: number, end: number): [string, string][] {
  if (findBareLineEnding(raw.subarray(start, end)) !== -1) return [];
  const text = raw.toString('latin1', start, end).replace(/\r\n[ \t]+/g, ' ');
  const out: [string, string][] = [];
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) return [];
    out.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]);
  }
  return out;
}

/** The value of the one field named `name`: null when there is none, false when there are more. */
export const only = (fields: [string, string][], name: string): string | null | false => {
  const found = fields.filter(([k]) => k === name);
  return found.length === 0 ? null : found.length === 1 ? found[0][1] : false;
};

/** The one Content-Type of a header block whose body mailparser passes through as it is; null otherwise. */
function passedThroughType(fields: [string, string][]): string | null {
  const type = only(fields, 'content-type');
  const encoding = only(fields, 'content-transfer-encoding');
  if (!type || encoding === false || only(fields, 'content-disposition') !== null) return null;
  return encoding === null || UNDECODED_ENCODING.test(encoding) ? type : null;
}

/** Whether a part with these headers is a text part mailparser leaves undecoded. */
function undecodedText(fields: [string, string][]): boolean {
  const type = passedThroughType(fields);
  const m = type === null ? null : /^text\/(?:plain|html)\s*(?:;\s*charset\s*=\s*(?:"([^"]*)"|([^\s;"]+))\s*)?;?$/i.exec(type);
  if (!m) return false;
  const charset = m[1] ?? m[2];
  return charset === undefined || undecodedCharset(charset);
}

/** The skeleton of a one-level multipart/alternative message whose top header block ends at `end`, or null. */
export function alternativeSkeleton(raw: Buffer, end: number): Skeleton | null {
  const type = passedThroughType(headerFields(raw, 0, end));
  if (type === null) return null;
  const m = /^multipart\/alternative\s*;\s*boundary\s*=\s*(?:"([^"\r\n]{1,70})"|([A-Za-z0-9'()+_,./:=?-]{1,70}))\s*;?$/i.exec(type);
  if (!m) return null;
  const boundary = m[1] ?? m[2];
  const delimiter = Buffer.from(`--${boundary}`, 'latin1');

  // Every occurrence of the delimiter must begin a line and be a delimiter line exactly: "--b" or,
  // once and last, "--b--". Anything near that (trailing blanks, a bare LF) mailparser may read
  // otherwise, so it is left to mailparser.
  const start = bodyStart(end);
  const lines: { at: number; next: number }[] = [];
  let closed = false;
  for (let p = raw.indexOf(delimiter, start); p !== -1; p = raw.indexOf(delimiter, p + 1)) {
    if (closed) return null;
    if (p !== start && (raw[p - 2] !== 0x0d || raw[p - 1] !== 0x0a)) return null;
    const q = p + delimiter.length;
    if (raw[q] === 0x0d && raw[q + 1] === 0x0a) lines.push({ at: p, next: q + 2 });
    else if (raw[q] === 0x2d && raw[q + 1] === 0x2d && (q + 2 === raw.length || (raw[q + 2] === 0x0d && raw[q + 3] === 0x0a))) {
      lines.push({ at: p, next: q + 2 });
      closed = true;
    } else return null;
  }
  if (!closed || lines.length < 2) return null;

  const pieces: Buffer[] = [];
  const bodies: Skeleton['bodies'] = [];
  let copied = 0;
  for (let i = 0; i + 1 < lines.length; i++) {
    const partStart = lines[i].next;
    // The line break before a delimiter belongs to the delimiter.
    const partEnd = lines[i + 1].at - 2;
    // A part must begin with its headers (one without any is mailparser's to judge).
    if (partEnd < partStart || (raw[partStart] === 0x0d && raw[partStart + 1] === 0x0a)) return null;
    const headEnd = raw.indexOf('\r\n\r\n', partStart);
    if (headEnd === -1 || headEnd + 4 > partEnd) return null;
    const fields = headerFields(raw, partStart, headEnd);
    if (fields.length === 0) return null;
    const partType = only(fields, 'content-type');
    if (partType === false || (partType && /^\s*(?:multipart|message)\//i.test(partType))) return null;
    const partBody = bodyStart(headEnd);
    if (!undecodedText(fields) || partBody === partEnd) continue;
    let token: string;
    do token = `postern-part-${randomBytes(12).toString('hex')}`;
    while (raw.includes(token));
    pieces.push(raw.subarray(copied, partBody), Buffer.from(token));
    bodies.push({ token, start: partBody, end: partEnd });
    copied = partEnd;
  }
  if (bodies.length === 0) return null;
  pieces.push(raw.subarray(copied));
  return { bytes: Buffer.concat(pieces), boundary, bodies };
}

/**
 * The text and HTML of the message, from mailparser's parse of its skeleton with each token
 * replaced by its body; null when that parse is not the structure the skeleton was cut for.
 */
export function fillSkeleton(parsed: ParsedMail, skeleton: Skeleton, raw: Buffer): { text: string; html: string } | null {
  const type = parsed.headers.get('content-type') as { value?: unknown; params?: Record<string, unknown> } | undefined;
  if (type?.value !== 'multipart/alternative' || type.params?.boundary !== skeleton.boundary) return null;
  let text = parsed.text ?? '';
  let html = typeof parsed.html === 'string' ? parsed.html : '';
  for (const { token, start, end } of skeleton.bodies) {
    const inText = text.split(token);
    const inHtml = html.split(token);
    if (inText.length + inHtml.length !== 3) return null;
    const body = decodedText(raw, start, end);
    if (inText.length === 2) text = inText.join(body);
    else html = inHtml.join(body);
  }
  return { text, html };
}
