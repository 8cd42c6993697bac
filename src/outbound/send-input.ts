// Reading the send body (POST /v1/send, /v1/send-raw). The contract's zod schema
// (contract/sending-schemas.ts) checks the shape; channelIssues() checks what depends on the channel, which a template send only knows once
// its template is resolved. Both feed one list, so every problem is reported at once.
import type { Issue } from '../lib/errors.js';
import { zodIssues } from '../lib/validation.js';
import { inlineContentSchemas } from '../contract/channels.js';
import { sendBody, type SendBody } from '../contract/sending-schemas.js';
import { specOf } from '../channels/index.js';
import type { Channel } from '../contract/channels.js';

const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;

type Input = Record<string, unknown>;
const FIELDS = Object.keys(sendBody.shape) as (keyof typeof sendBody.shape)[];
// Keys that name an object's machinery rather than data: JSON.parse keeps them as plain keys, but
// much code (and zod's records) drops or trips on them, so they are refused rather than lost.
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const squash = (s: string) => s.toLowerCase().replace(/[_-]/g, '');

/** Top-level fields the send body does not have: each refused by name (a misspelt `scheduled_at` must not send at once). */
function unknownFields(input: Input): Issue[] {
  return Object.keys(input)
    .filter((k) => !(FIELDS as string[]).includes(k))
    .map((k) => {
      const like = FIELDS.find((f) => squash(f) === squash(k));
      return { path: k, message: `unknown field${like ? `; did you mean ${like}?` : ''}` };
    });
}

/** `__proto__`, `constructor` and `prototype` as metadata or vars keys. */
function reservedKeys(input: Input): Issue[] {
  const issues: Issue[] = [];
  for (const field of ['metadata', 'vars'] as const) {
    const v = input[field];
    if (!v || typeof v !== 'object' || Array.isArray(v)) continue;
    for (const k of Object.keys(v)) if (RESERVED_KEYS.has(k)) issues.push({ path: `${field}.${k}`, message: `${k} is a reserved key` });
  }
  return issues;
}

/**
 * The send body, with every problem of its shape: unknown fields, reserved keys, and what the
 * schema refuses. When the schema refuses some fields, the fields it accepts are still returned
 * (`refused` names the others), so the checks that need the channel or the template can report
 * their problems too.
 */
export function readSendBody(raw: unknown): { body: SendBody; issues: Issue[]; refused: Set<string> } {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    const nothing = { vars: {}, metadata: {} } as unknown as SendBody;
    return { body: nothing, issues: [{ path: '', message: 'the request body must be a JSON object' }], refused: new Set() };
  }
  const input = raw as Input;
  const issues = [...unknownFields(input), ...reservedKeys(input)];
  const known = Object.fromEntries(FIELDS.filter((f) => f in input).map((f) => [f, input[f]]));
  const parsed = sendBody.safeParse(known);
  if (parsed.success) return { body: parsed.data, issues, refused: new Set() };
  issues.push(...zodIssues(parsed.error));
  const partial: Input = {};
  const refused = new Set<string>();
  for (const f of FIELDS) {
    const r = sendBody.shape[f].safeParse(known[f]);
    if (r.success && r.data !== undefined) partial[f] = r.data;
    else if (!r.success) refused.add(f);
  }
  return { body: partial as SendBody, issues, refused };
}

/** Checks of the body that need no template: one-of rules and the scheduling window. */
export function shapeIssues(body: SendBody, opts: { raw: boolean; now: Date }): Issue[] {
  const issues: Issue[] = [];
  if (opts.raw && body.template !== undefined) issues.push({ path: 'template', message: 'send-raw takes content, not template' });
  if (body.template !== undefined && body.content !== undefined)
    issues.push({ path: 'content', message: 'give either template or content, not both' });
  if (body.template === undefined && body.content === undefined)
    issues.push({
      path: opts.raw ? 'content' : 'template',
      message: opts.raw ? 'content is required' : 'one of template or content is required',
    });
  if (body.content !== undefined && body.channel === undefined)
    issues.push({ path: 'channel', message: 'channel is required for a raw send' });
  if (body.content !== undefined && body.version !== undefined)
    issues.push({ path: 'version', message: 'version applies to template sends only' });
  if (body.template !== undefined && body.interpolate !== undefined)
    issues.push({ path: 'interpolate', message: 'interpolate applies to inline content only' });
  if (body.scheduledAt !== undefined) {
    const at = Date.parse(body.scheduledAt);
    const now = opts.now.getTime();
    if (!(at > now)) issues.push({ path: 'scheduledAt', message: 'must be in the future' });
    else if (at - now > MAX_SCHEDULE_MS) issues.push({ path: 'scheduledAt', message: 'must be within 30 days' });
  }
  if (body.content !== undefined && body.channel !== undefined) {
    const r = inlineContentSchemas[body.channel].safeParse(body.content);
    if (!r.success) for (const i of r.error.issues) issues.push({ path: ['content', ...i.path.map(String)].join('.'), message: i.message });
  }
  return issues;
}

/** Checks that depend on the channel: the recipient's form and the email-only fields. */
export function channelIssues(channel: Channel, body: SendBody): Issue[] {
  const issues: Issue[] = [];
  const to = body.to;
  const spec = specOf(channel);
  const problem = to ? spec.recipientIssue(to) : null;
  if (problem) issues.push({ path: 'to', message: problem });
  if (!spec.envelope) {
    for (const f of ['from', 'fromName', 'cc', 'bcc', 'replyTo', 'attachments'] as const) {
      if (body[f] !== undefined) issues.push({ path: f, message: `${f} applies to email only` });
    }
  }
  return issues;
}
