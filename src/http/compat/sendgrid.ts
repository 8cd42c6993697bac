// SendGrid's Mail Send API v3 (https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send)
// under /compat/sendgrid, for `@sendgrid/mail` with its client's `baseUrl` set to
// `{publicUrl}/compat/sendgrid` and a Postern key as the API key: POST /v3/mail/send. Each
// personalization's to, cc and bcc become one message per recipient, all of the request committed
// together or none; `template_id` names a Postern template and `dynamic_template_data` its vars;
// `categories` and `custom_args` become metadata; `send_at` schedules. 202 with X-Message-Id (the
// first message's id); errors are SendGrid's `{errors: [{message, field, help}]}`, which the SDK
// raises as its ResponseError.
import type { Router } from 'express';
import { AppError, invalidBody, type Issue } from '../../lib/errors.js';
import type { Outbound } from '../../outbound/index.js';
import { bearerKey, principalOf, requireScope } from '../auth.js';
import { STATUS as POSTERN_STATUS } from '../errors.js';
import type { VendorApi } from './compat.js';
import { acceptEmails, mailbox, sendAt, type VendorEmail } from './email.js';
import type { ErrorCode } from '../../contract/vocabulary.js';
import type { MetadataValue } from '../../contract/message-schemas.js';

const MAX_PERSONALIZATIONS = 1000;
const MAX_RECIPIENTS = 1000;

// SendGrid answers every refused body 400; the rest as Postern does.
const STATUS: Record<ErrorCode, number> = { ...POSTERN_STATUS, invalid_body: 400, invalid_domain: 400 };

type Json = Record<string, unknown>;

/** `{email, name}` (SendGrid's address object) → a bare address; issues name `field`. */
function address(value: unknown, field: string, issues: Issue[]): { address: string; name?: string } | null {
  const v = value as { email?: unknown; name?: unknown } | null;
  const box = v && typeof v === 'object' && typeof v.email === 'string' ? mailbox(v.email) : null;
  if (!box) {
    issues.push({ path: field, message: 'must be an object with a valid email' });
    return null;
  }
  return typeof v!.name === 'string' && v!.name ? { address: box.address, name: v!.name } : box;
}

function addresses(value: unknown, field: string, issues: Issue[]): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    issues.push({ path: field, message: 'must be a list of {email, name}' });
    return [];
  }
  return value.flatMap((v, i) => address(v, `${field}.${i}`, issues)?.address ?? []);
}

function textRecord(value: unknown, field: string, issues: Issue[]): Record<string, MetadataValue> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    issues.push({ path: field, message: 'must be an object of strings' });
    return {};
  }
  return Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [k, String(v)]));
}

/** A Mail Send body in Postern's terms: one email per personalization, or the issues. */
function readMail(raw: unknown, issues: Issue[]): VendorEmail[] {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    issues.push({ path: '', message: 'the request body must be a JSON object' });
    return [];
  }
  const m = raw as Json;
  for (const legacy of ['sections', 'batch_id', 'asm', 'ip_pool_name'] as const)
    if (m[legacy] !== undefined) issues.push({ path: legacy, message: `${legacy} is not supported by Postern` });
  const from =
    m.from === undefined
      ? (issues.push({ path: 'from.email', message: 'The from object must be provided for every email send.' }), null)
      : address(m.from, 'from', issues);
  const replyTo = m.reply_to === undefined ? null : address(m.reply_to, 'reply_to', issues);
  const templateId = m.template_id;
  if (templateId !== undefined && typeof templateId !== 'string')
    issues.push({ path: 'template_id', message: 'must be a string: the Postern template slug' });
  const content = Array.isArray(m.content) ? (m.content as Json[]) : [];
  if (m.content !== undefined && !Array.isArray(m.content)) issues.push({ path: 'content', message: 'must be a list of {type, value}' });
  const part = (type: string) => content.find((c) => c?.type === type)?.value as string | undefined;
  for (const [i, c] of content.entries())
    if (c?.type !== 'text/plain' && c?.type !== 'text/html')
      issues.push({ path: `content.${i}.type`, message: 'Postern sends text/plain and text/html content' });
  if (templateId === undefined && part('text/plain') === undefined && part('text/html') === undefined)
    issues.push({ path: 'content', message: 'Unless a valid template_id is provided, the content parameter is required.' });
  const attachments: NonNullable<VendorEmail['attachments']> = [];
  if (Array.isArray(m.attachments))
    for (const [i, a] of (m.attachments as Json[]).entries()) {
      if (typeof a?.content !== 'string' || typeof a.filename !== 'string')
        issues.push({ path: `attachments.${i}`, message: 'needs content (base64) and filename' });
      else
        attachments.push({
          filename: a.filename,
          contentType: typeof a.type === 'string' ? a.type : 'application/octet-stream',
          content: a.content,
        });
    }
  const metadata = textRecord(m.custom_args, 'custom_args', issues);
  if (m.categories !== undefined) {
    if (!Array.isArray(m.categories) || !m.categories.every((c) => typeof c === 'string'))
      issues.push({ path: 'categories', message: 'must be a list of strings' });
    else if (m.categories.length) metadata.categories = m.categories.join(',');
  }
  const sendAtAll = sendAt(m.send_at, 'send_at', issues);
  const list = m.personalizations;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_PERSONALIZATIONS) {
    issues.push({ path: 'personalizations', message: `must be a list of 1 to ${MAX_PERSONALIZATIONS} personalizations` });
    return [];
  }
  let total = 0;
  const emails = (list as Json[]).map((p, i): VendorEmail => {
    const at = (f: string) => `personalizations.${i}.${f}`;
    if (!p || typeof p !== 'object') issues.push({ path: `personalizations.${i}`, message: 'must be an object' });
    if (p?.substitutions !== undefined)
      issues.push({ path: at('substitutions'), message: 'legacy substitutions are not supported: use dynamic_template_data' });
    const recipients = [
      ...addresses(p?.to, at('to'), issues),
      ...addresses(p?.cc, at('cc'), issues),
      ...addresses(p?.bcc, at('bcc'), issues),
    ];
    if (!Array.isArray(p?.to) || p.to.length === 0)
      issues.push({
        path: at('to'),
        message:
          'The to array is required for all personalization objects, and must have at least one email object with a valid email address.',
      });
    total += recipients.length;
    const subject = typeof p?.subject === 'string' ? p.subject : typeof m.subject === 'string' ? m.subject : undefined;
    if (templateId === undefined && subject === undefined)
      issues.push({
        path: at('subject'),
        message:
          'The subject is required. You can get around this requirement if you use a template with a subject defined or if every personalization has a subject defined.',
      });
    const vars = p?.dynamic_template_data;
    return {
      from: from ?? undefined,
      recipients,
      replyTo: replyTo?.address,
      subject,
      text: part('text/plain'),
      html: part('text/html'),
      attachments,
      metadata: { ...metadata, ...textRecord(p?.custom_args, at('custom_args'), issues) },
      scheduledAt: sendAt(p?.send_at, at('send_at'), issues) ?? sendAtAll,
      template:
        typeof templateId === 'string' ? { slug: templateId, vars: vars && typeof vars === 'object' ? (vars as Json) : {} } : undefined,
    };
  });
  if (total > MAX_RECIPIENTS) issues.push({ path: 'personalizations', message: `at most ${MAX_RECIPIENTS} recipients in all` });
  return emails;
}

export function sendgridApi(deps: { outbound: Outbound }): VendorApi {
  return {
    prefix: 'sendgrid',
    name: 'SendGrid',
    supported: ['POST /v3/mail/send'],
    key: (req) => bearerKey(req.headers.authorization),
    error(err: AppError) {
      const status = STATUS[err.code];
      const issues = err.extra.issues as Issue[] | undefined;
      const errors = issues?.length
        ? issues.map((i) => ({ message: i.message, field: i.path || null, help: null }))
        : [
            {
              message:
                err.code === 'unauthorized'
                  ? `The provided authorization grant is invalid, expired, or revoked: ${err.message}`
                  : err.message,
              field: null,
              help: null,
            },
          ];
      return { status, body: { errors } };
    },
    routes(r: Router) {
      r.post('/v3/mail/send', requireScope('send'), async (req, res) => {
        const issues: Issue[] = [];
        const emails = readMail(req.body, issues);
        if (issues.length) throw invalidBody(issues);
        // Sandbox mode: validated and not sent, as SendGrid does it (200, no body).
        const settings = (req.body as Json).mail_settings as { sandbox_mode?: { enable?: unknown } } | undefined;
        if (settings?.sandbox_mode?.enable === true) {
          res.status(200).end();
          return;
        }
        const p = principalOf(res);
        const results = await acceptEmails(deps.outbound, { workspace: p.workspace, livemode: p.livemode }, emails, {
          mode: 'atomic',
          key: null,
        });
        const first = results.find((r) => r.ok);
        if (!first?.ok) throw new AppError('internal', 'no message accepted');
        res.setHeader('X-Message-Id', first.messages[0].id);
        res.status(202).end();
      });
    },
  };
}
