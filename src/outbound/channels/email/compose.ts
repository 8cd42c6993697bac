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
    html: input.html || undefined,
    text: input.text || undefined,
    messageId: input.messageId,
    date: input.date,
    headers,
    attachments: input.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content, encoding: 'base64' })),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}
