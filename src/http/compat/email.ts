// What the vendors' send calls have in common, read into Postern sends: a From mailbox, the
// recipients, the content or a template, attachments, metadata, a time to send. Postern sends one
// message per recipient (its status, suppressions and tracking are a recipient's), so every
// address in to, cc and bcc becomes a message of its own, addressed to it alone: what a vendor
// would have shown in the To and Cc headers is not reproduced (docs/migrating.md). The sends of
// one vendor call commit together or not at all (outbound.acceptBatch, atomic); a vendor's batch
// call commits its calls together and answers each (partial).
import type Addressparser from 'nodemailer/lib/addressparser/index.js';
import type { Attachment } from '../../channel.js';
import { AppError, invalidBody, isAppError, type Issue } from '../../lib/errors.js';
import type { AcceptResponse, BatchItemResult, Outbound, Sender } from '../../outbound/index.js';
import { isEmailAddress } from '../../contract/addresses.js';
import { lazyRequire } from '../../lib/lazy.js';
import type { MetadataValue } from '../../contract/message-schemas.js';

// Loaded at the first vendor call: an idle daemon does not load nodemailer (test/idle-memory.test.ts).
const addressparser = lazyRequire<typeof Addressparser>('nodemailer/lib/addressparser/index.js');
/** The addresses in a header's text, groups flattened. */
const addressesIn = (text: string) => addressparser()(text, { flatten: true });

/** One vendor send call, in Postern's terms. */
export interface VendorEmail {
  from?: { address: string; name?: string };
  /** Every recipient (to, cc and bcc), each a bare address. */
  recipients: string[];
  replyTo?: string;
  subject?: string;
  text?: string;
  html?: string;
  attachments?: Attachment[];
  metadata?: Record<string, MetadataValue>;
  /** ISO 8601 with a zone. */
  scheduledAt?: string;
  template?: { slug: string; vars: Record<string, unknown> };
}

/** A mailbox in a header's form (`Ann <ann@example.com>`, `ann@example.com`); null when it is not exactly one address. */
export function mailbox(text: string): { address: string; name?: string } | null {
  const parsed = addressesIn(text);
  if (parsed.length !== 1 || !isEmailAddress(parsed[0].address)) return null;
  return parsed[0].name ? { address: parsed[0].address, name: parsed[0].name } : { address: parsed[0].address };
}

/** A field that is one address or a list of them, in header form; issues name `field`. */
export function addressList(value: unknown, field: string, issues: Issue[]): string[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : typeof value === 'string' ? addressesIn(value).map((a) => a.address) : null;
  if (list === null || !list.every((a) => typeof a === 'string')) {
    issues.push({ path: field, message: 'must be an email address or a list of them' });
    return [];
  }
  const out: string[] = [];
  for (const entry of list) {
    const box = mailbox(entry);
    if (box) out.push(box.address);
    else issues.push({ path: field, message: `${JSON.stringify(entry)} is not an email address` });
  }
  return out;
}

/** The /v1/send bodies of one vendor email: one per recipient. */
function sendBodies(e: VendorEmail): Record<string, unknown>[] {
  const common: Record<string, unknown> = {};
  if (e.from) {
    common.from = e.from.address;
    if (e.from.name) common.fromName = e.from.name;
  }
  if (e.replyTo) common.replyTo = e.replyTo;
  if (e.metadata && Object.keys(e.metadata).length) common.metadata = e.metadata;
  if (e.scheduledAt) common.scheduledAt = e.scheduledAt;
  if (e.template) {
    common.template = e.template.slug;
    common.vars = e.template.vars;
  } else {
    const content: Record<string, unknown> = { subject: e.subject ?? '' };
    if (e.text !== undefined) content.text = e.text;
    if (e.html !== undefined) content.html = e.html;
    common.channel = 'email';
    common.content = content;
    if (e.attachments?.length) common.attachments = e.attachments;
  }
  return e.recipients.map((to) => ({ ...common, to }));
}

/** The outcome of one vendor email: its messages' answers, or the error that refused it. */
export type EmailResult = { ok: true; messages: AcceptResponse[] } | { ok: false; error: AppError };

/**
 * Accepts vendor emails. `atomic`: all or none (any refusal is thrown); `partial`: each email is
 * answered on its own. An email's messages share their content, so what refuses one refuses all
 * of them; its recipients were checked by the vendor module before.
 */
export async function acceptEmails(
  outbound: Outbound,
  sender: Sender,
  emails: VendorEmail[],
  opts: { mode: 'atomic' | 'partial'; key: string | null },
): Promise<EmailResult[]> {
  const bodies = emails.map(sendBodies);
  const items = bodies.flat().map((body) => ({ body, raw: false, idempotencyKey: null }));
  if (items.length === 0) throw invalidBody([{ path: 'to', message: 'at least one recipient is required' }]);
  const owner = bodies.flatMap((b, email) => b.map(() => email));
  let answer;
  try {
    answer = await outbound.acceptBatch(sender, items, opts);
  } catch (err) {
    throw isAppError(err) ? inVendorTerms(err, owner, emails.length) : err;
  }
  const results: EmailResult[] = [];
  let next = 0;
  for (const b of bodies) {
    const mine = answer.data.slice(next, next + b.length);
    next += b.length;
    const refused = mine.find((r): r is Extract<BatchItemResult, { error: unknown }> => 'error' in r);
    if (refused) {
      const { code, message, ...extra } = refused.error;
      results.push({ ok: false, error: new AppError(code, message, extra) });
    } else results.push({ ok: true, messages: mine as AcceptResponse[] });
  }
  return results;
}

/**
 * An atomic refusal names the Postern send (`messages.{i}.to`); a vendor caller knows its emails:
 * the path names the email (`{k}.to`, or `to` when it sent one), and each issue is told once
 * however many of the email's recipients had it.
 */
function inVendorTerms(err: AppError, owner: number[], emails: number): AppError {
  const where = (i: number, rest: string) => (emails === 1 ? rest : rest ? `${owner[i]}.${rest}` : String(owner[i]));
  if (err.code === 'invalid_body' && Array.isArray(err.extra.issues)) {
    const seen = new Set<string>();
    const issues: Issue[] = [];
    for (const issue of err.extra.issues as Issue[]) {
      const m = /^messages\.(\d+)(?:\.(.*))?$/.exec(issue.path);
      const path = m ? where(Number(m[1]), m[2] ?? '') : issue.path;
      if (seen.has(`${path}\n${issue.message}`)) continue;
      seen.add(`${path}\n${issue.message}`);
      issues.push({ path, message: issue.message });
    }
    return invalidBody(issues);
  }
  if (typeof err.extra.index === 'number') {
    const { index, ...extra } = err.extra;
    const message = err.message.replace(/^messages\.\d+: /, '');
    return new AppError(err.code, emails === 1 ? message : `${owner[index]}: ${message}`, extra, err.retryAfter);
  }
  return err;
}

/** An ISO 8601 date-time with a zone, or a Unix time in seconds, as the ISO form accept takes. */
export function sendAt(value: unknown, field: string, issues: Issue[]): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return new Date(value * 1000).toISOString();
  if (typeof value === 'string' && /^\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:?\d\d)$/i.test(value) && !Number.isNaN(Date.parse(value)))
    return new Date(value).toISOString();
  issues.push({ path: field, message: 'must be an ISO 8601 date-time with a time zone, such as 2030-01-01T09:00:00Z' });
  return undefined;
}
