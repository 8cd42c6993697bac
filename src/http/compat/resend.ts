// Resend's API (https://resend.com/docs/api-reference) under /compat/resend, for the `resend` SDK
// with `baseUrl` (or RESEND_BASE_URL) set to `{publicUrl}/compat/resend` and a Postern key as its
// API key: POST /emails, POST /emails/batch, GET /emails/{id}, POST /emails/{id}/cancel.
// Errors are Resend's `{statusCode, name, message}`, which the SDK returns as `error`.
import type { Router } from 'express';
import { AppError, invalidBody, type Issue } from '../../lib/errors.js';
import type { ContentRow, Scope } from '../../messages/index.js';
import type { Outbound } from '../../outbound/index.js';
import { bearerKey, principalOf, requireScope } from '../auth.js';
import { STATUS } from '../errors.js';
import { describe, type VendorApi } from './compat.js';
import { acceptEmails, addressList, mailbox, sendAt, type VendorEmail } from './email.js';
import type { ErrorCode } from '../../contract/vocabulary.js';
import type { Message } from '../../contract/message-schemas.js';

const MAX_RECIPIENTS = 50;
const MAX_BATCH = 100;

// Resend's error names and statuses (https://resend.com/docs/api-reference/errors).
const ERRORS: Partial<Record<ErrorCode, [number, string]>> = {
  invalid_request: [422, 'invalid_parameter'],
  invalid_body: [422, 'validation_error'],
  unauthorized: [401, 'missing_api_key'],
  insufficient_scope: [401, 'restricted_api_key'],
  forbidden: [403, 'invalid_access'],
  plan_limit: [403, 'validation_error'],
  not_found: [404, 'not_found'],
  not_cancelable: [422, 'validation_error'],
  conflict: [409, 'concurrent_idempotent_requests'],
  payload_too_large: [413, 'invalid_attachment'],
  unsupported_media_type: [415, 'invalid_parameter'],
  rate_limited: [429, 'rate_limit_exceeded'],
  quota_exceeded: [429, 'monthly_quota_exceeded'],
  unavailable: [503, 'application_error'],
};

/** What Resend's GET /emails/{id} calls `last_event`, from a Postern status. */
const LAST_EVENT: Record<Message['status'], string> = {
  scheduled: 'scheduled',
  queued: 'queued',
  rendered: 'queued',
  // Dispatched: with a delivery under way; with an error: deferred, to be retried.
  dispatched: 'queued',
  sent: 'sent',
  delivered: 'delivered',
  failed: 'failed',
  opted_out: 'suppressed',
  suppressed: 'suppressed',
  blocked: 'failed',
  canceled: 'canceled',
};

type Json = Record<string, unknown>;

/** One Resend email body (snake_case, as the SDK sends it) in Postern's terms, or its issues. */
function readEmail(raw: unknown, path: string, issues: Issue[]): VendorEmail | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    issues.push({ path, message: 'must be an email object' });
    return null;
  }
  const e = raw as Json;
  const at = (f: string) => (path ? `${path}.${f}` : f);
  const before = issues.length;
  let from: VendorEmail['from'];
  if (typeof e.from !== 'string') issues.push({ path: at('from'), message: 'is required: `Name <address>` or an address' });
  else {
    from = mailbox(e.from) ?? undefined;
    if (!from) issues.push({ path: at('from'), message: 'must be `Name <address>` or an address' });
  }
  if (e.to === undefined) issues.push({ path: at('to'), message: 'is required' });
  const to = addressList(e.to, at('to'), issues);
  const recipients = [...to, ...addressList(e.cc, at('cc'), issues), ...addressList(e.bcc, at('bcc'), issues)];
  if (to.length > MAX_RECIPIENTS) issues.push({ path: at('to'), message: `at most ${MAX_RECIPIENTS} recipients` });
  const replyTo = addressList(e.reply_to, at('reply_to'), issues);
  const template = e.template as { id?: unknown; variables?: unknown } | undefined;
  if (template !== undefined && (typeof template !== 'object' || template === null || typeof template.id !== 'string'))
    issues.push({ path: at('template.id'), message: 'must be the template: its Postern slug' });
  if (!template && typeof e.subject !== 'string') issues.push({ path: at('subject'), message: 'is required' });
  if (!template && typeof e.html !== 'string' && typeof e.text !== 'string')
    issues.push({ path: at('html'), message: 'one of html or text is required' });
  if (e.react !== undefined) issues.push({ path: at('react'), message: 'render React on the client: the SDK sends html' });
  const metadata: Record<string, string> = {};
  if (e.tags !== undefined) {
    if (!Array.isArray(e.tags)) issues.push({ path: at('tags'), message: 'must be a list of {name, value}' });
    else
      for (const [i, tag] of e.tags.entries()) {
        const t = tag as { name?: unknown; value?: unknown };
        if (typeof t?.name !== 'string' || (t.value !== undefined && typeof t.value !== 'string'))
          issues.push({ path: at(`tags.${i}`), message: 'must be {name, value} with string values' });
        else metadata[t.name] = t.value ?? '';
      }
  }
  const attachments: NonNullable<VendorEmail['attachments']> = [];
  if (e.attachments !== undefined) {
    if (!Array.isArray(e.attachments)) issues.push({ path: at('attachments'), message: 'must be a list' });
    else
      for (const [i, a] of (e.attachments as Json[]).entries()) {
        if (a?.path !== undefined)
          issues.push({ path: at(`attachments.${i}.path`), message: 'attachments by URL are not supported: send content' });
        else if (typeof a?.content !== 'string' || typeof a.filename !== 'string')
          issues.push({ path: at(`attachments.${i}`), message: 'needs filename and base64 content' });
        else
          attachments.push({
            filename: a.filename,
            contentType: typeof a.content_type === 'string' ? a.content_type : 'application/octet-stream',
            content: a.content,
          });
      }
  }
  const scheduledAt = sendAt(e.scheduled_at, at('scheduled_at'), issues);
  if (issues.length > before) return null;
  return {
    from,
    recipients,
    replyTo: replyTo[0],
    subject: e.subject as string | undefined,
    text: typeof e.text === 'string' ? e.text : undefined,
    html: typeof e.html === 'string' ? e.html : undefined,
    attachments,
    metadata,
    scheduledAt,
    template: template ? { slug: template.id as string, vars: (template.variables as Json | undefined) ?? {} } : undefined,
  };
}

/** Resend's view of a message (GET /emails/{id}). */
function emailView(m: Message, row: ContentRow): Json {
  const content = JSON.parse(row.content) as { subject?: string; text?: string; html?: string };
  return {
    object: 'email',
    id: m.publicId,
    to: [m.recipient],
    from: m.fromOverride ? (m.fromNameOverride ? `${m.fromNameOverride} <${m.fromOverride}>` : m.fromOverride) : '',
    created_at: m.createdAt,
    subject: content.subject ?? '',
    html: content.html ?? null,
    text: content.text ?? null,
    bcc: null,
    cc: null,
    reply_to: row.reply_to ? [row.reply_to] : null,
    last_event: m.status === 'dispatched' && m.error !== null ? 'delivery_delayed' : LAST_EVENT[m.status],
    scheduled_at: m.scheduledAt,
    message_id: m.publicId,
    tags: Object.entries(m.metadata).map(([name, value]) => ({ name, value: String(value) })),
  };
}

export function resendApi(deps: { outbound: Outbound; messageRow(scope: Scope, publicId: string): Promise<ContentRow> }): VendorApi {
  const { outbound } = deps;
  return {
    prefix: 'resend',
    name: 'Resend',
    supported: ['POST /emails', 'POST /emails/batch', 'GET /emails/{id}', 'POST /emails/{id}/cancel'],
    key: (req) => bearerKey(req.headers.authorization),
    error(err) {
      const [status, name] =
        err.extra.key === 'invalid'
          ? [403, 'invalid_api_key']
          : (ERRORS[err.code] ?? [STATUS[err.code], STATUS[err.code] >= 500 ? 'application_error' : 'validation_error']);
      return { status, body: { statusCode: status, name, message: describe(err) } };
    },
    routes(r: Router) {
      r.post('/emails', requireScope('send'), async (req, res) => {
        const issues: Issue[] = [];
        const email = readEmail(req.body, '', issues);
        if (!email) throw invalidBody(issues);
        const p = principalOf(res);
        const [result] = await acceptEmails(outbound, { workspace: p.workspace, livemode: p.livemode }, [email], {
          mode: 'atomic',
          key: req.get('idempotency-key') ?? null,
        });
        if (!result.ok) throw result.error;
        res.json({ id: result.messages[0].id });
      });

      // `x-batch-validation: strict` (the default) is all or none; `permissive` answers each.
      r.post('/emails/batch', requireScope('send'), async (req, res) => {
        const mode = (req.get('x-batch-validation') ?? 'strict').toLowerCase();
        if (mode !== 'strict' && mode !== 'permissive')
          throw new AppError('invalid_request', 'x-batch-validation must be strict or permissive');
        if (!Array.isArray(req.body)) throw invalidBody([{ path: '', message: 'the body must be a list of emails' }]);
        const list = req.body as unknown[];
        if (list.length === 0 || list.length > MAX_BATCH) throw invalidBody([{ path: '', message: `send 1 to ${MAX_BATCH} emails` }]);
        const issues: Issue[][] = list.map(() => []);
        const emails = list.map((raw, i) => {
          const e = readEmail(raw, mode === 'strict' ? `${i}` : '', issues[i]);
          if (e?.attachments?.length || e?.scheduledAt)
            issues[i].push({ path: 'attachments', message: 'batch emails take no attachments or scheduled_at' });
          return issues[i].length ? null : e;
        });
        if (mode === 'strict' && issues.some((l) => l.length)) throw invalidBody(issues.flat());
        const p = principalOf(res);
        const sent = emails.filter((e): e is VendorEmail => e !== null);
        const results = sent.length
          ? await acceptEmails(outbound, { workspace: p.workspace, livemode: p.livemode }, sent, {
              mode: mode === 'strict' ? 'atomic' : 'partial',
              key: req.get('idempotency-key') ?? null,
            })
          : [];
        const data: Json[] = [];
        const errors: Json[] = [];
        let next = 0;
        for (const [index, e] of emails.entries()) {
          if (e === null) {
            errors.push({ index, message: describe(invalidBody(issues[index])) });
            continue;
          }
          const result = results[next++];
          if (result.ok) data.push({ id: result.messages[0].id });
          else errors.push({ index, message: describe(result.error) });
        }
        res.json(mode === 'strict' ? { data } : { data, errors });
      });

      r.get('/emails/:id', requireScope('read'), async (req, res) => {
        const p = principalOf(res);
        const scope = { workspaceId: p.workspace.id, livemode: p.livemode };
        const id = String(req.params.id);
        const [m, row] = await Promise.all([outbound.get(scope, id), deps.messageRow(scope, id)]);
        res.json(emailView(m, row));
      });

      r.post('/emails/:id/cancel', requireScope('cancel'), async (req, res) => {
        const p = principalOf(res);
        const m = await outbound.cancel({ workspaceId: p.workspace.id, livemode: p.livemode }, String(req.params.id));
        res.json({ object: 'email', id: m.publicId });
      });
    },
  };
}
