// Builds the RFC 5322 message of an email delivery with nodemailer's MailComposer. Headers that
// name recipients are To and Cc only: Bcc recipients exist in the envelope alone. The Message-ID is
// derived from the message's public id (`<msg_…@hostname>`), so every attempt of the same message
// carries the same id and the remote side can recognise a duplicate after a crash mid-delivery.
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { Attachment } from '../channel.js';

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

export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const headers: Record<string, string> = {};
  if (input.unsubscribeUrl) {
    headers['List-Unsubscribe'] = `<${input.unsubscribeUrl}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
  }
  const composer = new MailComposer({
    from: input.from.name ? { name: input.from.name, address: input.from.address } : input.from.address,
    to: input.to,
    cc: input.cc.length ? input.cc : undefined,
    replyTo: input.replyTo ?? undefined,
    subject: input.subject,
    // `raw` content nodes are supported by MailComposer but missing from its type definitions.
    html: textPart(input.html, 'html') as string | undefined,
    text: textPart(input.text, 'plain') as string | undefined,
    messageId: input.messageId,
    date: input.date,
    headers,
    attachments: input.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      content: a.content,
      encoding: 'base64',
    })),
    // Bodies that are plain ASCII are quoted-printable without nodemailer's per-part character
    // census (a measurable cost per message); others keep its Q-or-B choice.
    textEncoding: ASCII.test(input.html + input.text + input.subject) ? 'quoted-printable' : undefined,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}
