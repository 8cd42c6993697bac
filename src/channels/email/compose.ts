// Builds the RFC 5322 message of an email delivery with nodemailer's MailComposer. Headers that
// name recipients are To and Cc only: Bcc recipients exist in the envelope alone. The Message-ID is
// derived from the message's public id (`<msg_…@hostname>`), so every attempt of the same message
// carries the same id and the remote side can recognise a duplicate after a crash mid-delivery.
//
// Line endings (SMTP smuggling): a send's subject, bodies, variables and attachments may hold a bare
// CR or LF, and nodemailer passes them through (7bit parts, its quoted-printable, message/rfc822
// attachments), while its SMTP client turns a bare LF into CRLF but leaves a bare CR alone. A remote
// MTA that reads `<CR>.<CR><LF>` as the end of data would then take what follows as SMTP commands.
// So header values are made one line (a line ending becomes a space), text bodies get CRLF before
// they are encoded, and the composed message is put in canonical form (every CR, LF or CRLF as
// CRLF) before it is signed: nothing but CRLF ever reaches the wire, and DKIM signs those bytes.
import type MailComposerClass from 'nodemailer/lib/mail-composer/index.js';
import type MimeNode from 'nodemailer/lib/mime-node/index.js';
import { lazyRequire } from '../../lib/lazy.js';
import type { Attachment } from '../../channel.js';
import type { SigningKey } from '../../domains/index.js';
import { signMessage } from './dkim.js';
import { foldField, mailbox, parameter, subjectValue } from './header-values.js';
import { quotedPrintableAscii } from './quoted-printable.js';

// Loaded where mail is composed: on a delivery thread, not the event loop (lib/lazy.ts).
const mailComposer = lazyRequire<typeof MailComposerClass>('nodemailer/lib/mail-composer/index.js');

export interface ComposeInput {
  from: { address: string; name: string };
  to: string;
  cc: string[];
  replyTo: string | null;
  subject: string;
  html: string;
  text: string;
  attachments: Attachment[];
  messageId: string;
  date: Date;
  /** One-click unsubscribe URL (template sends): List-Unsubscribe + List-Unsubscribe-Post. */
  unsubscribeUrl: string | null;
}

/** `<msg_xxx@host>` */
export function messageIdFor(publicId: string, hostname: string): string {
  return `<${publicId}@${hostname}>`;
}

/** The VERP envelope sender that routes a DSN back to its message. */
export function verpAddress(publicId: string, bounceDomain: string): string {
  return `bounces+${publicId}@${bounceDomain}`;
}

/** Index of the first CR not followed by LF, or LF not preceded by CR; -1 when every line ends in CRLF. */
function bareLineEnding(buf: Buffer): number {
  for (let pos = 0; ;) {
    const cr = buf.indexOf(0x0d, pos);
    const lf = buf.indexOf(0x0a, pos);
    // An LF before the next CR has no CR before it (every earlier CR came with its LF).
    if (lf !== -1 && (cr === -1 || lf < cr)) return lf;
    if (cr === -1) return -1;
    if (buf[cr + 1] !== 0x0a) return cr;
    pos = cr + 2;
  }
}

/** The bytes with every line ending (CRLF, a bare CR, a bare LF) as CRLF; the same buffer when they already are. */
export function crlfLineEndings(buf: Buffer): Buffer {
  const first = bareLineEnding(buf);
  if (first === -1) return buf;
  const out = Buffer.allocUnsafe(buf.length * 2);
  let o = buf.copy(out, 0, 0, first);
  for (let i = first; i < buf.length; i++) {
    const b = buf[i];
    if (b === 0x0d || b === 0x0a) {
      out[o++] = 0x0d;
      out[o++] = 0x0a;
      if (b === 0x0d && buf[i + 1] === 0x0a) i++;
    } else out[o++] = b;
  }
  return out.subarray(0, o);
}

const LINE_ENDING = /\r\n|\r|\n/g;
/** Text with CRLF line endings, the canonical form of a text body (RFC 2046 §4.1.1). */
const crlf = (text: string) => (text.includes('\r') || text.includes('\n') ? text.replace(LINE_ENDING, '\r\n') : text);
/** A header value on one line: a line ending becomes a space (folding is the composer's job). */
const oneLine = (value: string) => (value.includes('\r') || value.includes('\n') ? value.replace(LINE_ENDING, ' ') : value);

/**
 * The fast path of the quoted-printable parts (quoted-printable.ts): a leaf whose content is ASCII
 * text that nodemailer would send quoted-printable keeps nodemailer's own header block and gets
 * nodemailer's body from our encoder, as one raw node. Every other node is nodemailer's alone. For
 * ASCII content nodemailer's census of the text (more letters than other characters: Q, else B)
 * only asks whether there is a letter, so with one the node is asked with 'Q' and the census is
 * skipped; with no letter it is left to decide (base64). The message is byte for byte what
 * nodemailer composes without this (test/channels/email/compose-oracle.test.ts).
 */
function encodeAsciiParts(node: MimeNode): void {
  for (const child of node.childNodes) encodeAsciiParts(child);
  const content = node.content;
  // nodemailer's own reading of the content when it was set: printable (no control character, no
  // non-ASCII) and with a line over 76 characters. Printable and without DEL is QP_ASCII; short
  // lines go 7bit. Reading the flags spares two more scans of the content.
  const read = node as MimeNode & { _isPlainText?: boolean; _hasLongLines?: boolean };
  if (node.childNodes.length || typeof content !== 'string' || !read._isPlainText || !read._hasLongLines) return;
  if (content.includes('\x7f') || !/[a-z]/i.test(content)) return;
  // Asked with 'Q' in place of the census; put back, as the node's headers are encoded with it.
  const own = node.textEncoding;
  node.textEncoding = 'Q';
  const encoding = node.getTransferEncoding();
  node.textEncoding = own;
  if (encoding !== 'quoted-printable') return;
  // Named before the header block is built, so building it does not take the census either.
  node.setHeader('Content-Transfer-Encoding', encoding);
  node.setRaw(`${node.buildHeaders()}\r\n\r\n${quotedPrintableAscii(content)}`);
}

/**
 * Base64 as nodemailer's encoder writes a Buffer given in one chunk (base64/index.js): the bytes
 * up to a multiple of three encoded and cut every 76 characters with CRLF (a last full line
 * gets its CRLF too, unless the whole is one line), then the last one or two bytes' four
 * characters appended to the last line. So that line can run to 80 characters, one more quirk
 * of nodemailer's kept here, because the oracle is its message byte for byte.
 */
export function nodemailerBase64(bytes: Buffer): string {
  const whole = bytes.length - (bytes.length % 3);
  const head = bytes.toString('base64', 0, whole);
  const tail = bytes.toString('base64', whole);
  if (head.length <= 76) return head + tail;
  const lines: string[] = [];
  for (let i = 0; i < head.length; i += 76) lines.push(head.slice(i, i + 76));
  return lines.join('\r\n') + (head.length % 76 === 0 ? '\r\n' : '') + tail;
}

/**
 * The fast path of attachments: a leaf that nodemailer would send base64 (its content the
 * attachment's decoded bytes) keeps nodemailer's header block and gets the same body from
 * nodemailerBase64, as one raw node, instead of nodemailer's stream encoder, whose line wrapping
 * is a regular expression over the whole text (2 % of a message with an 80 KiB PDF). Held to
 * nodemailer's own message by test/channels/email/compose-oracle.test.ts.
 */
function encodeBase64Parts(node: MimeNode): void {
  for (const child of node.childNodes) encodeBase64Parts(child);
  if (node.childNodes.length || !Buffer.isBuffer(node.content) || node.getTransferEncoding() !== 'base64') return;
  node.setHeader('Content-Transfer-Encoding', 'base64');
  node.setRaw(`${node.buildHeaders()}\r\n\r\n${nodemailerBase64(node.content)}`);
}

/**
 * An attachment as MailComposer takes it, its bytes sent base64. A message/* or multipart/* part
 * cannot be base64 (RFC 2046 §5.2.1, §5.1): nodemailer would send a message's bytes as they are
 * (8-bit, any line length, whatever they hold) and build a broken tree for a multipart type, so
 * such an attachment is sent as application/octet-stream (its name, `.eml` say, still tells a
 * mail client what it is).
 */
function attachmentOf(a: Attachment) {
  const contentType = /^(?:message|multipart)\//i.test(a.contentType) ? 'application/octet-stream' : a.contentType;
  return { filename: oneLine(a.filename), contentType: oneLine(contentType), content: a.content, encoding: 'base64' };
}

/** An attachment's Content-Type and Content-Disposition, with its name in a form that parses back (header-values.ts). */
function nameAttachments(node: MimeNode): void {
  for (const child of node.childNodes) nameAttachments(child);
  const filename = node.filename;
  if (!filename) return;
  const type = String(node.getHeader('Content-Type')).toLowerCase();
  // Prepared values are written as they are (folded), instead of nodemailer's.
  node.setHeader('Content-Type', { prepared: true, foldLines: true, value: `${type}; ${parameter('name', filename)}` } as never);
  node.setHeader('Content-Disposition', {
    prepared: true,
    foldLines: true,
    value: `attachment; ${parameter('filename', filename)}`,
  } as never);
}

/** The message with its (unfolded) field `name` replaced by `value`, folded. */
function replaceField(raw: Buffer, name: string, value: string): Buffer {
  const text = raw.toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  const head = text.slice(0, end);
  const field = new RegExp(`^${name}:.*(?:\\r\\n[ \\t].*)*`, 'm');
  return Buffer.from(head.replace(field, () => foldField(name, value)) + text.slice(end));
}

/** The message as nodemailer composes it, before canonical line endings; `fast` encodes ASCII parts with our encoder. */
export async function buildMime(input: ComposeInput, opts: { fast: boolean } = { fast: true }): Promise<Buffer> {
  const fromName = oneLine(input.from.name);
  const headers: Record<string, string> = {};
  if (input.unsubscribeUrl) {
    headers['List-Unsubscribe'] = `<${input.unsubscribeUrl}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
  }
  const composer = new (mailComposer())({
    // The display name is written after the build (header-values.ts: nodemailer cannot be told how).
    from: input.from.address,
    to: input.to,
    cc: input.cc.length ? input.cc : undefined,
    replyTo: input.replyTo ?? undefined,
    subject: subjectValue(oneLine(input.subject)),
    html: crlf(input.html) || undefined,
    text: crlf(input.text) || undefined,
    messageId: input.messageId,
    date: input.date,
    headers,
    attachments: input.attachments.map(attachmentOf),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  const root = composer.compile();
  nameAttachments(root);
  if (opts.fast) {
    encodeAsciiParts(root);
    encodeBase64Parts(root);
  }
  const raw = await root.build();
  return fromName ? replaceField(raw, 'From', mailbox(fromName, input.from.address)) : raw;
}

/** The message, every line ending CRLF (see the header of this file). */
export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  return crlfLineEndings(await buildMime(input));
}

export interface ComposeRequest {
  input: ComposeInput;
  /** Signs the message when set. */
  key: SigningKey | null;
}

/** The complete RFC 5322 message, DKIM-signed when a key is given (plain data in and out: it runs on a delivery thread). */
export async function composeSigned(req: ComposeRequest): Promise<Buffer> {
  const raw = await composeMessage(req.input);
  return req.key ? signMessage(raw, req.key) : raw;
}
