// Parsing with mailparser's simpleParser, skipping what we never store (HTML↔text conversion and
// link detection roughly halve its cost). Attachments are listed but their bytes are not kept:
// the attachment endpoint re-parses the raw source and picks the same index, so the index order
// must come from this one function (parseBounded), with the same limits.
//
// The parse is bounded, and never fails: hostile or broken mail must get a final SMTP answer, not a
// 451 the sender retries for days. A message with more MIME parts than `inbound.maxParts` is parsed
// up to the part where the limit falls (the body and the first attachments); one the parser cannot
// take at all (a header block over 1 MiB, nesting deeper than the stack) keeps only its top-level
// headers; HTML is converted to text at most 256 elements deep. Each of these sets `truncated`. The
// raw source is always stored whole.
//
// `headers` are the header lines as sent, each read as UTF-8 when its bytes are UTF-8 (SMTPUTF8
// mail) and byte for byte otherwise (headerText), whichever way the message was parsed.
import { isAscii, isUtf8 } from 'node:buffer';
import type { AddressObject, ParsedMail } from 'mailparser';
import type * as Mailparser from 'mailparser';
import type * as HtmlToText from 'html-to-text';
import { lazyRequire } from '../lib/lazy.js';
import { alternativeSkeleton, fillSkeleton } from './alternative-text.js';
import { attachmentSkeleton, fillAttachments } from './attachment-bodies.js';
import { endsHeaderBlock, plainTextShortcut } from './plain-text.js';
import { strippedReply } from './stripped-reply.js';

const mailparser = lazyRequire<typeof Mailparser>('mailparser');
const htmlToTextLib = lazyRequire<typeof HtmlToText>('html-to-text');

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
  /** The reply without its quoted history; null when that is the whole text (stripped-reply.ts). */
  strippedReply: string | null;
  truncated: boolean;
  headers: Record<string, string | string[]>;
  attachments: AttachmentInfo[];
}

export interface ParseLimits {
  /** `text` and `html` are each cut at this many UTF-8 bytes. */
  maxBodyBytes: number;
  /** MIME parts parsed (mailparser's maxChildNodes); the rest of the message is left unparsed. */
  maxParts: number;
}

const PARSE_OPTIONS = { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true } as const;

/** HTML nested deeper than this is not converted to text (html-to-text recurses per element). */
const HTML_MAX_DEPTH = 256;
/** Marks where html-to-text stopped at a limit; replaced by an ellipsis. */
const CUT_MARK = '\uE000';
/** mailparser's own limit on one header block. */
const MAX_HEADER_BYTES = 1024 * 1024;

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
function truncateUtf8(s: string, max: number): { value: string; truncated: boolean } {
  if (Buffer.byteLength(s) <= max) return { value: s, truncated: false };
  const cut = Buffer.from(s).subarray(0, max).toString('utf8');
  // A split multi-byte sequence decodes to U+FFFD at the end; drop it.
  return { value: cut.replace(/\uFFFD$/, ''), truncated: true };
}

/** Longest filename kept, in UTF-8 bytes (what file systems take: NAME_MAX). */
const MAX_FILENAME_BYTES = 255;

/**
 * A filename safe to hand to a client: no control, format (bidi) or lone surrogate characters, no
 * path separators or quotes, no leading dots, at most 255 UTF-8 bytes with its extension kept; a
 * generated `attachment-N.ext` when nothing is left. Idempotent, so it also cleans names stored by
 * earlier versions on their way out.
 */
export function safeFilename(name: unknown, index: number, contentType: string): string {
  const cleaned = (typeof name === 'string' ? name : '')
    .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '')
    .replace(/[\p{Cc}\p{Cf}\u2028\u2029"\\/]/gu, '_')
    .replace(/^[.\s]+/, '')
    .trim();
  if (cleaned) return truncateFilename(cleaned);
  const sub = safeContentType(contentType).split('/')[1];
  const ext = contentType === 'message/rfc822' ? 'eml' : sub.replace(/[^a-z0-9.+-]/gi, '').slice(0, 16) || 'bin';
  return `attachment-${index}.${ext}`;
}

function truncateFilename(name: string): string {
  if (Buffer.byteLength(name) <= MAX_FILENAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 17 ? name.slice(dot) : '';
  return truncateUtf8(name.slice(0, name.length - ext.length), MAX_FILENAME_BYTES - Buffer.byteLength(ext)).value.trimEnd() + ext;
}

// RFC 6838 4.2: type and subtype names are 1–127 of these characters.
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/**
 * The media type as a header may carry it: `type/subtype` in RFC 6838's characters, lowercase;
 * anything else (control bytes, an empty or a 200 KB value) is `application/octet-stream`.
 */
export function safeContentType(value: unknown): string {
  const v = typeof value === 'string' ? value.trim().toLowerCase() : '';
  return MEDIA_TYPE.test(v) ? v : 'application/octet-stream';
}

/**
 * A header line as text. mailparser gives each line one character per byte; SMTPUTF8 mail
 * (RFC 6532) carries UTF-8 in its header fields, so a line whose bytes are valid UTF-8 is read as
 * UTF-8. A line that is not (legacy 8-bit mail, most often Latin-1 or windows-1252) keeps one
 * character per byte: no byte is lost or replaced, and Latin-1 reads right. A string that already
 * holds a character above U+00FF is text already and is returned as it is.
 */
export function headerText(line: string): string {
  if (!/[^\x00-\x7f]/.test(line) || /[^\x00-\xff]/.test(line)) return line;
  const bytes = Buffer.from(line, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : line;
}

/**
 * The header fields as `headers` shows them. `ascii`: the header block is known to hold no byte
 * above 0x7F, so no line needs reading as UTF-8 (most mail; the check is one native pass).
 */
function headerObject(parsed: ParsedMail, ascii: boolean): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const { key: parsedKey, line: bytes } of parsed.headerLines ?? []) {
    const line = ascii ? bytes : headerText(bytes);
    const colon = line.indexOf(':');
    // mailparser's key, taken again from the line when reading it as UTF-8 changed it.
    const key = line === bytes ? parsedKey : line.slice(0, Math.max(colon, 0)).toLowerCase().trim();
    const value = (colon >= 0 ? line.slice(colon + 1) : '').replace(/\r?\n[ \t]+/g, ' ').trim();
    // Own fields only: a field named `constructor` or `__proto__` is a field like any other (the
    // latter defined, as assigning it would set the object's prototype).
    const prev = Object.hasOwn(out, key) ? out[key] : undefined;
    if (prev === undefined && key === '__proto__')
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else if (prev === undefined) out[key] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[key] = [prev, value];
  }
  return out;
}

/**
 * The top-level header block, for a message the parser cannot take whole: the fields that fit in
 * mailparser's limit with the blank line that ends the block (a field cut in two would be read as
 * something it is not, and a block one byte over the limit is refused whole).
 */
function headerBlock(raw: Buffer): Buffer {
  const end = raw.indexOf('\r\n\r\n');
  let cut = end === -1 ? raw.length : end;
  if (cut > MAX_HEADER_BYTES - 4) {
    cut = raw.lastIndexOf('\r\n', MAX_HEADER_BYTES - 4);
    // A line break followed by a blank continues the field above it.
    while (cut > 0 && (raw[cut + 2] === 0x20 || raw[cut + 2] === 0x09)) cut = raw.lastIndexOf('\r\n', cut - 1);
    cut = Math.max(cut, 0);
  }
  return Buffer.concat([raw.subarray(0, cut), Buffer.from('\r\n\r\n')]);
}

/** Where the `n`th line starting with `--` begins: every part after the first starts at one. */
function partCut(raw: Buffer, n: number): number {
  let count = raw.subarray(0, 2).toString('latin1') === '--' ? 1 : 0;
  if (count >= n) return 0;
  for (let i = raw.indexOf('\n--'); i !== -1; i = raw.indexOf('\n--', i + 1)) {
    if (++count >= n) return i + 1;
  }
  return raw.length;
}

const tooManyParts = (err: unknown) => (err as { code?: string })?.code === 'EMAXLEN' && /child nodes/.test(String((err as Error).message));

interface Bounded {
  parsed: ParsedMail | null;
  /** Why the parse is partial (null when the message was parsed whole). */
  partial: string | null;
}

/** mailparser within the limits; never throws (see the header of this file). */
async function parseBounded(raw: Buffer, maxParts: number): Promise<Bounded> {
  const parse = (bytes: Buffer) => mailparser().simpleParser(bytes, { ...PARSE_OPTIONS, maxChildNodes: maxParts } as typeof PARSE_OPTIONS);
  let reason: string;
  try {
    return { parsed: await parse(raw), partial: null };
  } catch (err) {
    reason = tooManyParts(err) ? `more than ${maxParts} MIME parts` : `unparseable: ${(err as Error).message}`;
    if (tooManyParts(err)) {
      try {
        return { parsed: await parse(raw.subarray(0, partCut(raw, maxParts - 1))), partial: `${reason}; parsed up to the limit` };
      } catch {
        // below: headers only
      }
    }
  }
  try {
    return { parsed: await parse(headerBlock(raw)), partial: `${reason}; kept the headers only` };
  } catch (err) {
    return { parsed: null, partial: `${reason}; headers unparseable: ${(err as Error).message}` };
  }
}

/** The text of HTML-only mail; `cut` when a limit stopped the conversion. */
function htmlToText(html: string): { text: string; cut: boolean } {
  try {
    const text = htmlToTextLib().convert(html, { wordwrap: false, limits: { maxDepth: HTML_MAX_DEPTH, ellipsis: CUT_MARK } });
    return text.includes(CUT_MARK) ? { text: text.replaceAll(CUT_MARK, '…'), cut: true } : { text, cut: false };
  } catch {
    return { text: '', cut: true };
  }
}

interface ForFields extends Bounded {
  /** The text (and HTML) when they were not read from `parsed` (below). */
  bodies?: { text: string; html: string; textAt: number | null };
}

/**
 * parseBounded, but without mailparser walking the bodies of the commonest forms: a single plain
 * text part is parsed for its header block only (plain-text.ts), an alternative of undecoded text
 * and HTML parts as a skeleton with its bodies left out (alternative-text.ts), and mail with files
 * attached as a skeleton without the files' base64 (attachment-bodies.ts).
 */
async function parseForFields(raw: Buffer, end: number, maxParts: number): Promise<ForFields> {
  if (end === -1 || end > MAX_HEADER_BYTES || !endsHeaderBlock(raw, end)) return parseBounded(raw, maxParts);
  const plain = await plainTextShortcut(raw, end, async (bytes) => {
    const head = await parseBounded(bytes, maxParts);
    return head.partial === null ? head : null;
  });
  if (plain) return { ...plain.head, bodies: { text: plain.text, html: '', textAt: plain.textAt } };
  const skeleton = alternativeSkeleton(raw, end);
  if (skeleton) {
    const cut = await parseBounded(skeleton.bytes, maxParts);
    const filled = cut.parsed && cut.partial === null ? fillSkeleton(cut.parsed, skeleton, raw) : null;
    if (filled) return { ...cut, bodies: { ...filled, textAt: null } };
  }
  const files = attachmentSkeleton(raw, end);
  if (files) {
    const cut = await parseBounded(files.bytes, maxParts);
    const filled = cut.parsed && cut.partial === null ? fillAttachments(cut.parsed, files) : null;
    if (filled) return { parsed: filled, partial: null };
  }
  return parseBounded(raw, maxParts);
}

export interface ParseResult extends ParsedFields {
  /** Why the fields are partial, or null. */
  partial: string | null;
  /** Where in the source the text's bytes begin, when it is the whole rest of it (plain-text.ts); else null. */
  textAt: number | null;
}

/**
 * The parsed fields of a received message. `wholeParse` leaves out the fast paths (plain-text.ts,
 * alternative-text.ts, attachment-bodies.ts) and has mailparser parse the whole message: the
 * answer they must equal, which the property tests hold them to.
 */
export async function parseMessage(raw: Buffer, limits: ParseLimits, { wholeParse = false } = {}): Promise<ParseResult> {
  const end = raw.indexOf('\r\n\r\n');
  const { parsed, partial, bodies }: ForFields = wholeParse
    ? await parseBounded(raw, limits.maxParts)
    : await parseForFields(raw, end, limits.maxParts);
  const from = mailboxes(parsed?.from)[0] ?? { email: '', name: '' };
  const html = bodies ? bodies.html : typeof parsed?.html === 'string' ? parsed.html : '';
  let text = bodies ? bodies.text : (parsed?.text ?? '');
  let cut = false;
  if (!text && html) ({ text, cut } = htmlToText(html.slice(0, limits.maxBodyBytes * 2)));
  const t = truncateUtf8(text, limits.maxBodyBytes);
  const h = truncateUtf8(html, limits.maxBodyBytes);
  const inReplyTo = parsed?.inReplyTo ?? '';
  return {
    from,
    to: mailboxes(parsed?.to),
    cc: mailboxes(parsed?.cc),
    subject: parsed?.subject ?? '',
    messageId: parsed?.messageId ?? '',
    inReplyTo: Array.isArray(inReplyTo) ? inReplyTo.join(' ') : inReplyTo,
    text: t.value,
    html: h.value,
    strippedReply: strippedReply(t.value),
    truncated: t.truncated || h.truncated || cut || partial !== null,
    // The top-level header lines are within the first CRLF CRLF (a header block with a bare LF
    // ends sooner), so when those bytes are ASCII, so is every line.
    headers: parsed ? headerObject(parsed, end !== -1 && isAscii(raw.subarray(0, end))) : {},
    attachments: (parsed?.attachments ?? []).map((a, index) => ({
      index,
      filename: safeFilename(a.filename, index, a.contentType),
      contentType: safeContentType(a.contentType),
      size: a.size ?? a.content?.length ?? 0,
    })),
    partial: partial ?? (cut ? `HTML nested deeper than ${HTML_MAX_DEPTH} elements` : null),
    textAt: bodies && bodies.textAt !== null && !t.truncated ? bodies.textAt : null,
  };
}

/** One attachment's bytes, extracted from the raw source on demand (with the limits it was stored with). */
export async function extractAttachment(
  raw: Buffer,
  index: number,
  maxParts: number,
): Promise<{ content: Buffer; contentType: string; filename: string } | null> {
  const { parsed } = await parseBounded(raw, maxParts);
  const a = parsed?.attachments[index];
  if (!a) return null;
  return { content: a.content, contentType: safeContentType(a.contentType), filename: safeFilename(a.filename, index, a.contentType) };
}
