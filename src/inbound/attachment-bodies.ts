// Mail with files attached, parsed without mailparser decoding the files. We store an attachment's
// name, type and size, not its bytes (parse.ts), yet mailparser splits every line of a base64 body
// and decodes it: for a message carrying a 1 MiB PDF that was most of the analysis thread's time.
//
// Each base64 body of a part that mailparser takes for an attachment (a disposition of
// `attachment`, or a media type other than text, multipart and message) is replaced by a unique
// token: 12 random bytes in base64. mailparser parses that skeleton, every header and every other
// part as they are; each attachment it decoded to a token's bytes gets the size of the body the
// token stands for. That size is exact only for strict base64 (the alphabet, CRLF line breaks,
// padding only at the end, a multiple of four characters), where every decoder gives the same
// bytes; any other body is left in place. The skeleton is used only when every token comes back
// as exactly one attachment; anything else is parsed whole.
// test/inbound/attachment-bodies.test.ts holds the result to mailparser's parse of the whole message.
import { randomBytes } from 'node:crypto';
import type { ParsedMail } from 'mailparser';
import { headerFields, only } from './alternative-text.js';
import { bodyStart } from './plain-text.js';

export interface AttachmentSkeleton {
  /** The message with each left-out body as its token. */
  bytes: Buffer;
  /** Each left-out body: its token's bytes and the size it decodes to. */
  bodies: { token: Buffer; size: number }[];
}

/** 1 for the bytes of the base64 alphabet. */
const ALPHABET = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') ALPHABET[c.charCodeAt(0)] = 1;
const CR = 0x0d;
const LF = 0x0a;
const EQUALS = 0x3d;
const BASE64 = /^\s*base64\s*$/i;
/** Media types mailparser reads as parts of their own. */
const HOLDS_PARTS = /^\s*(?:multipart|message)\//i;
/** Media types mailparser may read as text, when no disposition says attachment. */
const TEXT = /^\s*text\//i;

/**
 * The size `raw[start, end)` decodes to when it is strict base64: characters of the alphabet and
 * CRLF line breaks, then at most two `=` and nothing but line breaks after them, a multiple of four
 * characters in all; null otherwise. One pass over the bytes (a regular expression over the text
 * took six times as long).
 */
export function strictBase64Size(raw: Buffer, start: number, end: number): number | null {
  const lineBreak = (i: number) => raw[i] === CR && i + 1 < end && raw[i + 1] === LF;
  let chars = 0;
  let i = start;
  for (; i < end; i++) {
    if (ALPHABET[raw[i]] === 1) chars++;
    else if (lineBreak(i)) i++;
    else break;
  }
  let padding = 0;
  for (; i < end && padding < 2 && raw[i] === EQUALS; i++) padding++;
  for (; i < end; i += 2) if (!lineBreak(i)) return null;
  return (chars + padding) % 4 === 0 ? ((chars + padding) / 4) * 3 - padding : null;
}

/** Whether mailparser takes a part with these header fields for an attachment, its body in base64. */
function base64File(fields: [string, string][]): boolean {
  const encoding = only(fields, 'content-transfer-encoding');
  if (typeof encoding !== 'string' || !BASE64.test(encoding)) return false;
  const type = only(fields, 'content-type');
  const disposition = only(fields, 'content-disposition');
  if (type === false || disposition === false || (type !== null && HOLDS_PARTS.test(type))) return false;
  return (disposition !== null && /^\s*attachment\s*(?:;|$)/i.test(disposition)) || (type !== null && !TEXT.test(type));
}

/**
 * The skeleton of a message whose top header block ends at `end`, with the base64 bodies of its
 * attachments left out; null when it has none. A part is looked for after every line that begins
 * with `--`: mailparser decides which of them are delimiters, and fillAttachments checks that it
 * read each token where it was put.
 */
export function attachmentSkeleton(raw: Buffer, end: number): AttachmentSkeleton | null {
  const pieces: Buffer[] = [];
  const bodies: AttachmentSkeleton['bodies'] = [];
  let copied = 0;
  for (let line = raw.indexOf('\r\n--', bodyStart(end)); line !== -1; line = raw.indexOf('\r\n--', line + 2)) {
    const partStart = raw.indexOf('\r\n', line + 2);
    if (partStart === -1) break;
    const headEnd = raw.indexOf('\r\n\r\n', partStart);
    if (headEnd === -1) break;
    // The header block must follow the delimiter line directly, every line of it a field.
    const fields = headerFields(raw, partStart + 2, headEnd);
    if (fields.length === 0 || !base64File(fields)) continue;
    const body = bodyStart(headEnd);
    // The line break before the next line that begins with `--` belongs to that line.
    const next = raw.indexOf('\r\n--', body);
    if (next === -1) break;
    const size = next > body ? strictBase64Size(raw, body, next) : null;
    if (size === null) continue;
    let token: Buffer;
    let written: string;
    do {
      token = randomBytes(12);
      written = token.toString('base64');
    } while (raw.includes(written));
    pieces.push(raw.subarray(copied, body), Buffer.from(written));
    bodies.push({ token, size });
    copied = next;
    line = next - 2;
  }
  if (bodies.length === 0) return null;
  pieces.push(raw.subarray(copied));
  return { bytes: Buffer.concat(pieces), bodies };
}

/**
 * mailparser's parse of the skeleton with each token's attachment given the size of the body it
 * stands for; null when a token did not come back as exactly one attachment.
 */
export function fillAttachments(parsed: ParsedMail, skeleton: AttachmentSkeleton): ParsedMail | null {
  for (const { token, size } of skeleton.bodies) {
    const found = parsed.attachments.filter((a) => a.content?.length === token.length && a.content.equals(token));
    if (found.length !== 1) return null;
    found[0].size = size;
  }
  return parsed;
}
