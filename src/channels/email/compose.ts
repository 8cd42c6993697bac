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
import { lazyRequire } from '../../lib/lazy.js';
import type { Attachment } from '../../channel.js';
import type { SigningKey } from '../../domains/sending.js';
import { signMessage } from './dkim.js';

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
export function bareLineEnding(buf: Buffer): number {
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

const ASCII = /^[\x09\x0a\x0d\x20-\x7e]*$/;
const LONG_LINE = /[^\r\n]{77}/;

/**
 * Quoted-printable (RFC 2045 §6.7) of ASCII text, lines ending in CRLF: `=` escaped, whitespace at
 * a line's end escaped, soft breaks keeping every line within 76 characters. nodemailer's encoder
 * does the same through a stream transform with a regex per line and was the largest single cost
 * of composing a 5 KiB html message; this is a straight loop over the lines.
 */
export function quotedPrintableAscii(text: string): string {
  const out: string[] = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    let enc = line.includes('=') ? line.replaceAll('=', '=3D') : line;
    const last = enc.charCodeAt(enc.length - 1);
    if (last === 0x20 || last === 0x09) enc = enc.replace(/[ \t]+$/, (ws) => ws.replaceAll(' ', '=20').replaceAll('\t', '=09'));
    let pos = 0;
    while (enc.length - pos > 76) {
      let end = pos + 75;
      // Never split an =XX escape across a soft break (look at the two characters before the cut).
      if (enc.charCodeAt(end - 1) === 0x3d) end -= 1;
      else if (enc.charCodeAt(end - 2) === 0x3d) end -= 2;
      out.push(enc.slice(pos, end) + '=');
      pos = end;
    }
    out.push(enc.slice(pos));
  }
  return out.join('\r\n');
}

/**
 * A text part as nodemailer takes it: ASCII with a line too long for 7bit is handed over already
 * encoded (a raw MIME node); anything else is left to nodemailer (7bit, or its Q-or-B choice).
 */
function textPart(content: string, type: 'plain' | 'html'): string | { raw: string } | undefined {
  if (!content) return undefined;
  if (!ASCII.test(content) || !LONG_LINE.test(content)) return content;
  return {
    raw: `Content-Type: text/${type}; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${quotedPrintableAscii(content)}`,
  };
}

/** The message, every line ending CRLF (see the header of this file). */
export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const subject = oneLine(input.subject);
  const html = crlf(input.html);
  const text = crlf(input.text);
  const fromName = oneLine(input.from.name);
  const headers: Record<string, string> = {};
  if (input.unsubscribeUrl) {
    headers['List-Unsubscribe'] = `<${input.unsubscribeUrl}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
  }
  const composer = new (mailComposer())({
    from: fromName ? { name: fromName, address: input.from.address } : input.from.address,
    to: input.to,
    cc: input.cc.length ? input.cc : undefined,
    replyTo: input.replyTo ?? undefined,
    subject,
    // `raw` content nodes are supported by MailComposer but missing from its type definitions.
    html: textPart(html, 'html') as string | undefined,
    text: textPart(text, 'plain') as string | undefined,
    messageId: input.messageId,
    date: input.date,
    headers,
    // Attachment bytes are kept as given: base64 on the wire, except message/* parts, which MIME
    // sends as they are and the canonical form below gives CRLF line endings.
    attachments: input.attachments.map((a) => ({
      filename: oneLine(a.filename),
      contentType: oneLine(a.contentType),
      content: a.content,
      encoding: 'base64',
    })),
    // Bodies that are plain ASCII are quoted-printable without nodemailer's per-part character
    // census (a measurable cost per message); others keep its Q-or-B choice.
    textEncoding: ASCII.test(html + text + subject) ? 'quoted-printable' : undefined,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return crlfLineEndings(await composer.compile().build());
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
