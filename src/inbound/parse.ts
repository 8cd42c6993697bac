// Parsing with mailparser's simpleParser, skipping what we never store (HTML↔text conversion and
// link detection roughly halve its cost). Attachments are listed but their bytes are not kept:
// the attachment endpoint re-parses the raw source and picks the same index, so the index order
// must come from this one function.
import { convert } from 'html-to-text';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import { stripReply } from './stripped-reply.js';

export interface Mailbox {
  email: string;
  name: string;
}

export interface AttachmentInfo {
  index: number;
  filename: string;
  contentType: string;
  size: number;
}

export interface ParsedFields {
  from: Mailbox;
  to: Mailbox[];
  cc: Mailbox[];
  subject: string;
  messageId: string;
  inReplyTo: string;
  text: string;
  html: string;
  strippedReply: string;
  truncated: boolean;
  headers: Record<string, string | string[]>;
  attachments: AttachmentInfo[];
}

export const PARSE_OPTIONS = { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true } as const;

function mailboxes(v: AddressObject | AddressObject[] | undefined): Mailbox[] {
  const list = Array.isArray(v) ? v : v ? [v] : [];
  const out: Mailbox[] = [];
  const walk = (items: { address?: string; name?: string; group?: unknown[] }[]) => {
    for (const a of items) {
      if (a.group) walk(a.group as typeof items);
      else if (a.address || a.name) out.push({ email: (a.address ?? '').toLowerCase(), name: a.name ?? '' });
    }
  };
  for (const o of list) walk(o.value);
  return out;
}

/** Cuts a string to at most `max` UTF-8 bytes without splitting a character. */
export function truncateUtf8(s: string, max: number): { value: string; truncated: boolean } {
  if (Buffer.byteLength(s) <= max) return { value: s, truncated: false };
  const cut = Buffer.from(s).subarray(0, max).toString('utf8');
  // A split multi-byte sequence decodes to U+FFFD at the end; drop it.
  return { value: cut.replace(/\uFFFD$/, ''), truncated: true };
}

export function safeFilename(name: string | undefined, index: number, contentType: string): string {
  const cleaned = (name ?? '')
    .replace(/[\u0000-\u001f\u007f"\\/]/g, '_')
    .replace(/^\.+/, '')
    .trim()
    .slice(0, 200);
  if (cleaned) return cleaned;
  const ext =
    contentType === 'message/rfc822' ? 'eml' : (contentType.split('/')[1] ?? 'bin').replace(/[^a-z0-9.+-]/gi, '').slice(0, 16) || 'bin';
  return `attachment-${index}.${ext}`;
}

function headerObject(parsed: ParsedMail): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const { key, line } of parsed.headerLines) {
    const colon = line.indexOf(':');
    const value = (colon >= 0 ? line.slice(colon + 1) : '').replace(/\r?\n[ \t]+/g, ' ').trim();
    const prev = out[key];
    out[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

export async function parseMessage(raw: Buffer, maxBodyBytes: number): Promise<ParsedFields> {
  const parsed = await simpleParser(raw, PARSE_OPTIONS);
  const from = mailboxes(parsed.from)[0] ?? { email: '', name: '' };
  const html = typeof parsed.html === 'string' ? parsed.html : '';
  let text = parsed.text ?? '';
  if (!text && html) text = convert(html.slice(0, maxBodyBytes * 2), { wordwrap: false });
  const t = truncateUtf8(text, maxBodyBytes);
  const h = truncateUtf8(html, maxBodyBytes);
  const inReplyTo = parsed.inReplyTo ?? '';
  return {
    from,
    to: mailboxes(parsed.to),
    cc: mailboxes(parsed.cc),
    subject: parsed.subject ?? '',
    messageId: parsed.messageId ?? '',
    inReplyTo: Array.isArray(inReplyTo) ? inReplyTo.join(' ') : inReplyTo,
    text: t.value,
    html: h.value,
    strippedReply: stripReply(t.value),
    truncated: t.truncated || h.truncated,
    headers: headerObject(parsed),
    attachments: parsed.attachments.map((a, index) => ({
      index,
      filename: safeFilename(a.filename, index, a.contentType),
      contentType: a.contentType,
      size: a.size ?? a.content?.length ?? 0,
    })),
  };
}

/** One attachment's bytes, extracted from the raw source on demand. */
export async function extractAttachment(
  raw: Buffer,
  index: number,
): Promise<{ content: Buffer; contentType: string; filename: string } | null> {
  const parsed = await simpleParser(raw, PARSE_OPTIONS);
  const a = parsed.attachments[index];
  if (!a) return null;
  return { content: a.content, contentType: a.contentType, filename: safeFilename(a.filename, index, a.contentType) };
}
