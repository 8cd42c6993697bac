// A submitted message, read into what the accept path takes: the From header (address and display
// name), Reply-To, the subject, the text and html bodies, the attachments and the Message-ID, plus
// the X-Postern-* fields (headers.ts). The message is parsed with mailparser and composed again on
// delivery like any API send (DKIM-signed with the workspace's key, tracking as the workspace has
// it); what the send body has no field for — other headers, the MIME structure, inline images'
// Content-IDs — does not travel. Bcc never reaches a header: recipients come from the envelope.
import type * as Mailparser from 'mailparser';
import type { ParsedMail } from 'mailparser';
import { endsHeaderBlock, plainTextShortcut } from '../inbound/index.js';
import { lazyRequire } from '../lib/lazy.js';
import type { Issue } from '../lib/errors.js';
import { readPosternHeaders, type PosternFields } from './headers.js';

const mailparser = lazyRequire<typeof Mailparser>('mailparser');

export interface SubmittedMessage {
  from: { address: string; name: string } | null;
  /** Addresses in the From header (more than one is refused). */
  fromCount: number;
  replyTo: string | null;
  subject: string;
  text: string | null;
  html: string | null;
  attachments: { filename: string; contentType: string; content: string }[];
  /** The Message-ID without its angle brackets, or null. */
  messageId: string | null;
  fields: PosternFields;
  issues: Issue[];
}

/** A file name the send body accepts: no slashes or control characters, at most 255 characters. */
function safeFilename(name: string | undefined, i: number, contentType: string): string {
  const cleaned = (name ?? '')
    .replace(/[\u0000-\u001f\u007f\\/]/g, '_')
    .trim()
    .slice(0, 255);
  if (cleaned) return cleaned;
  const sub = contentType.split('/')[1]?.replace(/[^a-z0-9]/gi, '') || 'bin';
  return `attachment-${i + 1}.${sub.slice(0, 10)}`;
}

const PARSE_OPTIONS = { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true } as const;

/**
 * The parse of a submitted message. A single plain text part (what scripts, monitors and most
 * apps' notifications submit) has only its header block parsed and its text taken from the body,
 * as a received one does (inbound/plain-text.ts: every decision about the form is mailparser's).
 * `wholeParse` has mailparser parse everything: the answer the shortcut must equal, which
 * test/submission/message.test.ts holds it to over generated messages.
 */
async function parse(raw: Buffer, wholeParse: boolean): Promise<{ parsed: ParsedMail; text: string | null }> {
  const end = wholeParse ? -1 : raw.indexOf('\r\n\r\n');
  if (end !== -1 && endsHeaderBlock(raw, end)) {
    const plain = await plainTextShortcut(raw, end, (head) =>
      mailparser()
        .simpleParser(head, PARSE_OPTIONS)
        .then(
          (parsed) => ({ parsed }),
          () => null,
        ),
    );
    // mailparser gives no text at all for an empty body.
    if (plain) return { parsed: plain.head.parsed, text: plain.text || null };
  }
  const parsed = await mailparser().simpleParser(raw, PARSE_OPTIONS);
  return { parsed, text: parsed.text ?? null };
}

/** Reads a submitted message. Never throws on content: what cannot be used is in `issues`. */
export async function readSubmitted(raw: Buffer, { wholeParse = false } = {}): Promise<SubmittedMessage> {
  const { parsed, text } = await parse(raw, wholeParse);
  // The header as written, unfolded (mailparser leaves an unknown header's encoded words as they are).
  const header = (name: string): string | undefined => {
    const line = parsed.headerLines.find((l) => l.key === name)?.line;
    return line === undefined
      ? undefined
      : line
          .slice(line.indexOf(':') + 1)
          .replace(/\r?\n[ \t]/g, ' ')
          .trim();
  };
  const { fields, issues } = readPosternHeaders(header);
  const fromList = parsed.from?.value ?? [];
  const first = fromList[0];
  const replyTo = parsed.replyTo?.value.find((a) => a.address)?.address ?? null;
  const attachments = parsed.attachments.map((a, i) => {
    const contentType = (a.contentType || 'application/octet-stream').toLowerCase();
    return { filename: safeFilename(a.filename, i, contentType), contentType, content: a.content.toString('base64') };
  });
  const html = typeof parsed.html === 'string' && parsed.html !== '' ? parsed.html : null;
  return {
    from: first?.address ? { address: first.address, name: first.name ?? '' } : null,
    fromCount: fromList.length,
    replyTo,
    subject: parsed.subject ?? '',
    text,
    html,
    attachments,
    messageId: parsed.messageId ? parsed.messageId.replace(/^<|>$/g, '') : null,
    fields,
    issues,
  };
}
