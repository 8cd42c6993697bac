// A message that is a single text/plain part, in UTF-8 or ASCII, neither quoted-printable nor base64
// nor format=flowed, is what most scripts, monitors and notifications send. mailparser's text for
// such a message is the body's own bytes decoded as UTF-8, CRLF made LF; walking those bytes one by
// one through its MIME splitter is most of what parsing costs (1.5 ms of CPU for 100 KiB). So only
// the header block of such a message goes through mailparser, and the text is taken from the body
// directly. Every decision about the message's form is still mailparser's: its parse of the header
// block says whether the message qualifies, and anything unexpected falls back to the whole parse.
// test/inbound/plain-text.test.ts holds the result to mailparser's own, message by message.
import type { ParsedMail } from 'mailparser';
import { findBareLineEnding } from '../lib/line-endings.js';

const HEADER_END = '\r\n\r\n';

/** Whether mailparser leaves a body in this charset undecoded (it compares names with non-alphanumerics removed). */
export const undecodedCharset = (charset: string): boolean =>
  ['ascii', 'usascii', 'utf8'].includes(charset.toLowerCase().replace(/[^a-z0-9]+/g, ''));

/** Transfer encodings mailparser passes through as they are (it decodes only quoted-printable and base64). */
export const UNDECODED_ENCODING = /^\s*(?:7bit|8bit|binary)\s*$/i;

/**
 * Whether a glance at the header block that ends at `end` allows a single plain text part. The
 * glance only spares the second parse for mail that plainly is something else; `isPlainText`
 * decides.
 */
function mayBePlain(raw: Buffer, end: number): boolean {
  const head = raw.toString('latin1', 0, end);
  if (/^content-type:(?![ \t]*text\/plain)/im.test(head)) return false;
  if (/^content-(?:disposition:|transfer-encoding:[ \t]*(?:quoted|base64))/im.test(head)) return false;
  if (/format[ \t]*=/i.test(head)) return false;
  return !/charset[ \t]*=[ \t]*(?!"?(?:utf[-_]?8|us[-_]?ascii|ascii)\b)/i.test(head);
}

/** Whether mailparser, given this header block, takes the body as one undecoded text/plain part. */
function isPlainText(parsed: ParsedMail): boolean {
  const lines = parsed.headerLines ?? [];
  const count = (key: string) => lines.filter((h) => h.key === key).length;
  if (count('content-type') > 1 || count('content-transfer-encoding') > 1 || count('content-disposition') > 0) return false;
  const type = parsed.headers.get('content-type') as { value?: unknown; params?: Record<string, unknown> } | undefined;
  if (type !== undefined) {
    if (typeof type.value !== 'string' || type.value.trim().toLowerCase() !== 'text/plain') return false;
    const params = Object.entries(type.params ?? {});
    if (params.some(([k]) => k !== 'charset')) return false;
    const charset = params.length ? params[0][1] : undefined;
    if (charset !== undefined && (typeof charset !== 'string' || !undecodedCharset(charset))) return false;
  }
  const encoding = parsed.headers.get('content-transfer-encoding');
  if (encoding !== undefined && !(typeof encoding === 'string' && UNDECODED_ENCODING.test(encoding))) return false;
  return !parsed.attachments?.length;
}

/**
 * Whether the first CRLF CRLF of `raw`, at `end`, ends its header block: only when every line end
 * before it is a CRLF, as mailparser also ends the block at a blank line after a bare LF.
 */
export const endsHeaderBlock = (raw: Buffer, end: number): boolean => findBareLineEnding(raw.subarray(0, end)) === -1;

/** Where the body of a message whose header block ends at `end` begins. */
export const bodyStart = (end: number): number => end + HEADER_END.length;

/**
 * The text mailparser gives for undecoded bytes of a text part: UTF-8, line ends made LF. It
 * replaces /\r?\n/ with LF; replacing CRLF alone is the same string, found faster.
 */
export function decodedText(raw: Buffer, start: number, end = raw.length): string {
  return raw.toString('utf8', start, end).replaceAll('\r\n', '\n');
}

/**
 * The shortcut as one decision, for received and submitted mail alike. `end` is the first CRLF
 * CRLF of `raw`, one that ends its header block (endsHeaderBlock). When the glance allows a single
 * plain text part, the block alone is parsed by `parseHead` (the caller's mailparser call, with its
 * own limits; null for a parse it cannot use); when mailparser takes it as one, that parse is
 * returned with the text read from the body. Null otherwise: the caller parses the whole message.
 */
export async function plainTextShortcut<H extends { parsed: ParsedMail | null }>(
  raw: Buffer,
  end: number,
  parseHead: (head: Buffer) => Promise<H | null>,
): Promise<{ head: H & { parsed: ParsedMail }; text: string; textAt: number } | null> {
  if (!mayBePlain(raw, end)) return null;
  const textAt = bodyStart(end);
  const head = await parseHead(raw.subarray(0, textAt));
  if (!head?.parsed || !isPlainText(head.parsed)) return null;
  return { head: head as H & { parsed: ParsedMail }, text: decodedText(raw, textAt), textAt };
}
