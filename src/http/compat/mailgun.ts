// Mailgun's send API (https://documentation.mailgun.com/docs/mailgun/api-reference/send/mailgun/messages)
// under /compat/mailgun, for the `mailgun.js` SDK with `url` set to `{publicUrl}/compat/mailgun`
// and a Postern key as its key: POST /v3/{domain}/messages, a form (multipart or urlencoded),
// authenticated by HTTP basic auth as user `api`. Answers and errors are Mailgun's (`{id,
// message}`, `{message}`), so the SDK raises its own errors. What Mailgun takes that Postern has
// no equivalent for is refused by name rather than ignored (docs/migrating.md).
import type { Request, Response, Router } from 'express';
import { invalidBody, type AppError, type Issue } from '../../lib/errors.js';
import type { Outbound } from '../../outbound/index.js';
import { principalOf, requireScope } from '../auth.js';
import { STATUS } from '../errors.js';
import { describe, type VendorApi } from './compat.js';
import { acceptEmails, addressList, mailbox, type VendorEmail } from './email.js';
import type { Form } from './form.js';
import type { ErrorCode } from '../../contract/vocabulary.js';
import type { MetadataValue } from '../../contract/message-schemas.js';

const MAX_RECIPIENTS = 500;

const STATUSES: Partial<Record<ErrorCode, number>> = {
  invalid_request: 400,
  invalid_body: 400,
  unsupported_media_type: 400,
  insufficient_scope: 403,
  plan_limit: 403,
  quota_exceeded: 403,
};

function mailgunError(err: AppError): { status: number; body: { message: string } } {
  if (err.code === 'unauthorized') return { status: 401, body: { message: 'Forbidden' } };
  return { status: STATUSES[err.code] ?? STATUS[err.code], body: { message: describe(err) } };
}

// The options Postern's settings decide instead (tracking is the workspace's and domain's).
const IGNORED_OPTIONS = new Set(['o:tracking', 'o:tracking-opens', 'o:tracking-clicks']);

/** A Mailgun form, in Postern's terms, or its issues. */
function readEmail(form: Form, issues: Issue[]): VendorEmail | null {
  const all = (name: string) => form.fields.get(name) ?? [];
  const one = (name: string) => all(name).at(-1);
  const from = one('from') ? mailbox(one('from')!) : null;
  if (!from) issues.push({ path: 'from', message: "'from' parameter is missing or is not one address" });
  if (all('to').length === 0) issues.push({ path: 'to', message: "'to' parameter is missing" });
  const recipients = ['to', 'cc', 'bcc'].flatMap((f) => all(f).flatMap((v) => addressList(v, f, issues)));
  if (recipients.length > MAX_RECIPIENTS)
    issues.push({ path: 'to', message: `at most ${MAX_RECIPIENTS} recipients (to, cc and bcc together)` });
  const metadata: Record<string, MetadataValue> = {};
  let replyTo: string | undefined;
  let scheduledAt: string | undefined;
  let vars: Record<string, unknown> = {};
  const json = (name: string, value: string) => {
    try {
      const parsed = JSON.parse(value) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    } catch {
      // told below
    }
    issues.push({ path: name, message: 'must be a JSON object' });
    return {};
  };
  for (const [name, values] of form.fields) {
    const value = values.at(-1)!;
    if (name.startsWith('v:')) metadata[name.slice(2)] = value;
    else if (name === 'o:tag') metadata.tag = values.join(',');
    else if (name === 'o:deliverytime') {
      const at = Date.parse(value);
      if (Number.isNaN(at)) issues.push({ path: name, message: 'must be an RFC 2822 date, such as Fri, 14 Oct 2030 23:10:10 -0000' });
      else scheduledAt = new Date(at).toISOString();
    } else if (name === 'o:testmode') {
      if (/^(yes|true)$/i.test(value))
        issues.push({ path: name, message: 'Postern has no test mode flag: send with a test key (sk_test_…) instead' });
    } else if (name === 'h:Reply-To') replyTo = value;
    else if (name === 'h:X-Mailgun-Variables' || name === 't:variables') vars = { ...vars, ...json(name, value) };
    else if (
      (name.startsWith('o:') && !IGNORED_OPTIONS.has(name)) ||
      name.startsWith('h:') ||
      name === 'recipient-variables' ||
      name === 'amp-html'
    )
      issues.push({ path: name, message: 'is not supported by Postern (docs/migrating.md lists what is)' });
  }
  const reply = replyTo === undefined ? [] : addressList(replyTo, 'h:Reply-To', issues);
  const template = one('template');
  if (!template && one('text') === undefined && one('html') === undefined)
    issues.push({ path: 'text', message: "Need at least one of 'text', 'html' or 'template' parameters specified" });
  const attachments = form.files
    .filter((f) => f.field === 'attachment' || f.field === 'inline')
    .map((f) => ({ filename: f.filename, contentType: f.contentType, content: f.content.toString('base64') }));
  if (issues.length) return null;
  return {
    from: from!,
    recipients,
    replyTo: reply[0],
    subject: one('subject') ?? '',
    text: one('text'),
    html: one('html'),
    attachments,
    metadata,
    scheduledAt,
    template: template ? { slug: template, vars } : undefined,
  };
}

export function mailgunApi(deps: { outbound: Outbound }): VendorApi {
  const send = async (req: Request, res: Response) => {
    const issues: Issue[] = [];
    const email = readEmail(req.body as Form, issues);
    if (!email) throw invalidBody(issues);
    const p = principalOf(res);
    const [result] = await acceptEmails(deps.outbound, { workspace: p.workspace, livemode: p.livemode }, [email], {
      mode: 'atomic',
      key: null,
    });
    if (!result.ok) throw result.error;
    res.json({ id: `<${result.messages[0].id}>`, message: 'Queued. Thank you.' });
  };
  return {
    prefix: 'mailgun',
    name: 'Mailgun',
    supported: ['POST /v3/{domain}/messages'],
    body: 'form',
    key(req) {
      const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(req.headers.authorization ?? '');
      if (!m) return undefined;
      const [user, ...rest] = Buffer.from(m[1], 'base64').toString('utf8').split(':');
      return user === 'api' && rest.length ? rest.join(':') : undefined;
    },
    error: mailgunError,
    routes(r: Router) {
      r.post('/v3/:domain/messages', requireScope('send'), send);
    },
  };
}
