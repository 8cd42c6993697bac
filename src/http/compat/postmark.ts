// Postmark's email API (https://postmarkapp.com/developer/api/email-api) under /compat/postmark,
// for the `postmark` SDK with `requestHost` set to `<host:port>/compat/postmark` (and `useHttps`
// as the daemon is served) and a Postern key as the server token: POST /email, /email/batch,
// /email/withTemplate and /email/batchWithTemplates, authenticated by X-Postmark-Server-Token.
// Answers and errors are Postmark's (`{ErrorCode, Message}`), so the SDK throws its own error
// classes (ApiInputError, InvalidAPIKeyError, RateLimitExceededError, …).
import type { Request, Response, Router } from 'express';
import { AppError, invalidBody, type Issue } from '../../lib/errors.js';
import type { Outbound } from '../../outbound/index.js';
import type { Clock } from '../../lib/clock.js';
import { principalOf, requireScope } from '../auth.js';
import { STATUS } from '../errors.js';
import { describe, type VendorApi } from './compat.js';
import { acceptEmails, addressList, mailbox, type EmailResult, type VendorEmail } from './email.js';
import type { ErrorCode } from '../../contract/vocabulary.js';

const MAX_RECIPIENTS = 50;
const MAX_BATCH = 500;

// Postmark's statuses and API error codes (https://postmarkapp.com/developer/api/overview#error-codes):
// 300 invalid email request, 10 bad or missing token, 405 not allowed to send, 1101 template not found.
const ERRORS: Partial<Record<ErrorCode, [number, number]>> = {
  invalid_request: [422, 300],
  invalid_body: [422, 300],
  unauthorized: [401, 10],
  insufficient_scope: [401, 10],
  forbidden: [401, 10],
  plan_limit: [422, 412],
  not_found: [404, 0],
  payload_too_large: [422, 300],
  // 409: "JSON required".
  unsupported_media_type: [415, 409],
  rate_limited: [429, 0],
  quota_exceeded: [422, 405],
  unavailable: [503, 0],
};

function postmarkError(err: AppError): { status: number; body: { ErrorCode: number; Message: string } } {
  const issues = err.extra.issues as Issue[] | undefined;
  const [status, code] =
    err.code === 'invalid_body' && issues?.some((i) => i.path === 'template' && /not found|no template/i.test(i.message))
      ? [422, 1101]
      : (ERRORS[err.code] ?? [STATUS[err.code], 0]);
  return { status, body: { ErrorCode: code, Message: describe(err) } };
}

type Json = Record<string, unknown>;

/** One Postmark message (PascalCase), in Postern's terms, or its issues. */
function readEmail(raw: unknown, withTemplate: boolean, issues: Issue[]): VendorEmail | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    issues.push({ path: '', message: 'must be a message object' });
    return null;
  }
  const e = raw as Json;
  const before = issues.length;
  const from = typeof e.From === 'string' ? mailbox(e.From) : null;
  if (!from) issues.push({ path: 'From', message: "is required: a sender signature's address, optionally `Name <address>`" });
  if (e.To === undefined) issues.push({ path: 'To', message: 'is required' });
  const recipients = ['To', 'Cc', 'Bcc'].flatMap((f) => addressList(e[f], f, issues));
  if (recipients.length > MAX_RECIPIENTS)
    issues.push({ path: 'To', message: `at most ${MAX_RECIPIENTS} recipients (To, Cc and Bcc together)` });
  const replyTo = addressList(e.ReplyTo, 'ReplyTo', issues);
  let template: VendorEmail['template'];
  if (withTemplate) {
    // Postern's templates have slugs: TemplateAlias names one, and so does a TemplateId given as text.
    const slug = e.TemplateAlias ?? e.TemplateId;
    if ((typeof slug !== 'string' && typeof slug !== 'number') || slug === '')
      issues.push({ path: 'TemplateAlias', message: 'is required: the Postern template slug' });
    else template = { slug: String(slug), vars: (e.TemplateModel as Json | undefined) ?? {} };
  } else {
    if (typeof e.HtmlBody !== 'string' && typeof e.TextBody !== 'string')
      issues.push({ path: 'HtmlBody', message: 'provide either HtmlBody or TextBody (or both)' });
  }
  const metadata: Record<string, string> = {};
  if (typeof e.Tag === 'string' && e.Tag) metadata.tag = e.Tag;
  if (e.Metadata !== undefined && e.Metadata !== null) {
    if (typeof e.Metadata !== 'object' || Array.isArray(e.Metadata))
      issues.push({ path: 'Metadata', message: 'must be an object of strings' });
    else for (const [k, v] of Object.entries(e.Metadata as Json)) metadata[k] = String(v);
  }
  const attachments: NonNullable<VendorEmail['attachments']> = [];
  if (e.Attachments !== undefined && e.Attachments !== null) {
    if (!Array.isArray(e.Attachments)) issues.push({ path: 'Attachments', message: 'must be a list' });
    else
      for (const [i, a] of (e.Attachments as Json[]).entries()) {
        if (typeof a?.Name !== 'string' || typeof a.Content !== 'string' || typeof a.ContentType !== 'string')
          issues.push({ path: `Attachments.${i}`, message: 'needs Name, Content (base64) and ContentType' });
        else attachments.push({ filename: a.Name, contentType: a.ContentType, content: a.Content });
      }
  }
  if (issues.length > before) return null;
  return {
    from: from!,
    recipients,
    replyTo: replyTo[0],
    subject: typeof e.Subject === 'string' ? e.Subject : '',
    text: typeof e.TextBody === 'string' ? e.TextBody : undefined,
    html: typeof e.HtmlBody === 'string' ? e.HtmlBody : undefined,
    attachments,
    metadata,
    template,
  };
}

export function postmarkApi(deps: { outbound: Outbound; clock: Clock }): VendorApi {
  const { outbound } = deps;

  /** Postmark's answer to one message: accepted, or refused with its error code. */
  const answer = (raw: unknown, result: EmailResult | AppError): Json => {
    const to = raw && typeof raw === 'object' && typeof (raw as Json).To === 'string' ? (raw as Json).To : '';
    if (result instanceof AppError || !result.ok) {
      const { body } = postmarkError(result instanceof AppError ? result : result.error);
      return { ...body, To: to };
    }
    return { To: to, SubmittedAt: deps.clock.now().toISOString(), MessageID: result.messages[0].id, ErrorCode: 0, Message: 'OK' };
  };

  const single = (withTemplate: boolean) => async (req: Request, res: Response) => {
    const issues: Issue[] = [];
    const email = readEmail(req.body, withTemplate, issues);
    if (!email) throw invalidBody(issues);
    const p = principalOf(res);
    const [result] = await acceptEmails(outbound, { workspace: p.workspace, livemode: p.livemode }, [email], { mode: 'atomic', key: null });
    if (!result.ok) throw result.error;
    res.json(answer(req.body, result));
  };

  // Each message of a batch is answered on its own (Postmark answers 200 with an ErrorCode per message).
  const batch = (withTemplate: boolean) => async (req: Request, res: Response) => {
    const list = withTemplate ? (req.body as Json | undefined)?.Messages : req.body;
    if (!Array.isArray(list)) throw invalidBody([{ path: withTemplate ? 'Messages' : '', message: 'must be a list of messages' }]);
    if (list.length > MAX_BATCH) throw new AppError('invalid_body', `at most ${MAX_BATCH} messages in a batch`);
    const read = list.map((raw) => {
      const issues: Issue[] = [];
      return { raw, email: readEmail(raw, withTemplate, issues), issues };
    });
    const p = principalOf(res);
    const sent = read.filter((r) => r.email !== null).map((r) => r.email!);
    const results = sent.length
      ? await acceptEmails(outbound, { workspace: p.workspace, livemode: p.livemode }, sent, { mode: 'partial', key: null })
      : [];
    let next = 0;
    res.json(read.map((r) => answer(r.raw, r.email ? results[next++] : invalidBody(r.issues))));
  };

  return {
    prefix: 'postmark',
    name: 'Postmark',
    supported: ['POST /email', 'POST /email/batch', 'POST /email/withTemplate', 'POST /email/batchWithTemplates'],
    key(req) {
      const token = req.headers['x-postmark-server-token'];
      return typeof token === 'string' && token ? token : undefined;
    },
    error: postmarkError,
    routes(r: Router) {
      r.post('/email', requireScope('send'), single(false));
      r.post('/email/withTemplate', requireScope('send'), single(true));
      r.post('/email/batch', requireScope('send'), batch(false));
      r.post('/email/batchWithTemplates', requireScope('send'), batch(true));
    },
  };
}
