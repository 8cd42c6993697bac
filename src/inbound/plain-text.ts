// A message that is a single text/plain part, in UTF-8 or ASCII, neither quoted-printable nor base64
// nor format=flowed, is what most scripts, monitors and notifications send. mailparser's text for
// such a message is the body's own bytes decoded as UTF-8, CRLF made LF; walking those bytes one by
// one through its MIME splitter is most of what parsing costs (1.5 ms of CPU for 100 KiB). So only
// the header block of such a message goes through mailparser, and the text is taken from the body
// directly. Every decision about the message's form is still mailparser's: its parse of the header
// block says whether the message qualifies, and anything unexpected falls back to the whole parse.
// test/inbound/plain-text.test.ts holds the result to mailparser's own, message by message.
import type { ParsedMail } from 'mailparser';

const HEADER_END = '\r\n\r\n';

/** Charsets mailparser does not decode (it compares them with non-alphanumerics removed). */
const UNDECODED = new Set(['ascii', 'usascii', 'utf8']);

/**
 * Where the header block ends (the index of its blank line) when a glance at it allows a single
 * plain text part; -1 otherwise. The glance only spares the second parse for mail that plainly
 * is something else; `isPlainText` decides.
 */
export function plainHeaderEnd(raw: Buffer, maxHeaderBytes: number): number {
  const end = raw.indexOf(HEADER_END);
  if (end === -1 || end > maxHeaderBytes) return -1;
  const head = raw.toString('latin1', 0, end);
  if (/^content-type:(?![ \t]*text\/plain)/im.test(head)) return -1;
  if (/^content-(?:disposition:|transfer-encoding:[ \t]*(?:quoted|base64))/im.test(head)) return -1;
  if (/format[ \t]*=/i.test(head)) return -1;
  if (/charset[ \t]*=[ \t]*(?!"?(?:utf[-_]?8|us[-_]?ascii|ascii)\b)/i.test(head)) return -1;
  return end;
}

/** Whether mailparser, given this header block, takes the body as one undecoded text/plain part. */
export function isPlainText(parsed: ParsedMail): boolean {
  const lines = parsed.headerLines ?? [];
  const count = (key: string) => lines.filter((h) => h.key === key).length;
  if (count('content-type') > 1 || count('content-transfer-encoding') > 1 || count('content-disposition') > 0) return false;
  const type = parsed.headers.get('content-type') as { value?: unknown; params?: Record<string, unknown> } | undefined;
  if (type !== undefined) {
    if (typeof type.value !== 'string' || type.value.trim().toLowerCase() !== 'text/plain') return false;
    const params = Object.entries(type.params ?? {});
    if (params.some(([k]) => k !== 'charset')) return false;
    const charset = params.length ? params[0][1] : undefined;
    if (charset !== undefined && (typeof charset !== 'string' || !UNDECODED.has(charset.toLowerCase().replace(/[^a-z0-9]+/g, '')))) {
      return false;
    }
  }
  const encoding = parsed.headers.get('content-transfer-encoding');
  if (encoding !== undefined && !(typeof encoding === 'string' && /^\s*(?:7bit|8bit|binary)\s*$/i.test(encoding))) return false;
  return !parsed.attachments?.length;
}

/** Where the body of a message whose header block ends at `end` begins. */
export const bodyStart = (end: number): number => end + HEADER_END.length;

/**
 * The text mailparser gives for the body of a plain text message whose header block ends at `end`.
 * mailparser replaces /\r?\n/ with LF; replacing CRLF alone is the same string, found faster.
 */
export function plainText(raw: Buffer, end: number): string {
  return raw.toString('utf8', bodyStart(end)).replaceAll('\r\n', '\n');
}
