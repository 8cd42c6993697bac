// The channels of the interface and the content a message of each is made of: the names, the
// content shapes (as the API takes them, in a template version or an inline send), the output
// rendering makes of them, their zod schemas and how the dashboard shows each channel. Part of the
// contract (src/contract/): it imports nothing of ours, so the daemon, the dashboard and the SDK
// generator read the same words. A new channel's words are all here (docs/architecture.md, "Add
// a channel").
import { z } from 'zod';

export const CHANNELS = ['email', 'sms', 'push', 'web-push'] as const;
export type Channel = (typeof CHANNELS)[number];

// --- content: what a template version or an inline send holds, per channel -------------------

export interface EmailContent {
  subject: string;
  preheader?: string;
  html?: string;
  text?: string;
}
export interface SmsContent {
  body: string;
}
export interface PushContent {
  title?: string;
  body: string;
  data?: Record<string, unknown>;
  badge?: number;
  sound?: string;
}
export interface WebPushContent {
  title: string;
  body?: string;
  icon?: string;
  clickUrl?: string;
  data?: Record<string, unknown>;
  badge?: string;
}
export type ChannelContent = EmailContent | SmsContent | PushContent | WebPushContent;

// --- output: content rendered with a message's variables (the render endpoint's `output`), what a
// transport sends

export interface EmailOutput {
  subject: string;
  preheader: string;
  html: string;
  text: string;
}
export interface SmsOutput {
  body: string;
}
export interface PushOutput {
  title: string;
  body: string;
  data: Record<string, unknown>;
  badge: number | null;
  sound: string | null;
}
export interface WebPushOutput {
  title: string;
  body: string;
  icon: string | null;
  clickUrl: string | null;
  data: Record<string, unknown>;
  badge: string | null;
}
export type ChannelOutput = EmailOutput | SmsOutput | PushOutput | WebPushOutput;

// --- schemas: strict objects, an unknown field is a typo the caller wants to hear about ---------
// Built in functions called as /* @__PURE__ */, so the dashboard's bundle, which reads only the
// names and the hints, leaves them (and zod) out.

export const channelSchema = /* @__PURE__ */ (() => z.enum(CHANNELS, { message: `channel must be one of ${CHANNELS.join(', ')}` }))();

const text = (max: number) => z.string().max(max);
const data = /* @__PURE__ */ z.record(/* @__PURE__ */ z.string(), /* @__PURE__ */ z.unknown());

function templateContentSchemas(): Record<Channel, z.ZodType<ChannelContent>> {
  const email = z
    .strictObject({
      subject: text(998).min(1, 'subject is required'),
      preheader: text(1000).optional(),
      html: text(5_000_000).optional(),
      text: text(5_000_000).optional(),
    })
    .refine((c) => Boolean(c.html || c.text), { message: 'email content needs html or text', path: ['html'] });

  const sms = z.strictObject({ body: text(1600).min(1, 'body is required') });

  const push = z.strictObject({
    title: text(256).optional(),
    body: text(4000).min(1, 'body is required'),
    data: data.optional(),
    badge: z.number().int().min(0).optional(),
    sound: text(256).optional(),
  });

  const webPush = z.strictObject({
    title: text(256).min(1, 'title is required'),
    body: text(4000).optional(),
    icon: text(2048).optional(),
    clickUrl: text(2048).optional(),
    data: data.optional(),
    badge: text(2048).optional(),
  });
  return { email, sms, push, 'web-push': webPush };
}

/** The content schema of each channel; the send pipeline may use these for inline content too. */
export const contentSchemas: Record<Channel, z.ZodType<ChannelContent>> = /* @__PURE__ */ templateContentSchemas();

/**
 * The content of an inline send (POST /v1/send with `content`): the fields of a template version's
 * content, with the limits inline sends have always had (a body of at most 1 MB, a preheader of
 * 500 characters; push and web-push titles of 500). They differ from the template limits above for
 * no reason worth keeping; aligning them changes what the API accepts, so it waits for an API change.
 */
export const inlineContentSchemas: Record<Channel, z.ZodType> = /* @__PURE__ */ inlineSchemas();

function inlineSchemas(): Record<Channel, z.ZodType> {
  const inlineText = z.string().max(1_000_000);
  return {
    email: z
      .strictObject({
        subject: z.string().min(1).max(998),
        html: inlineText.optional(),
        text: inlineText.optional(),
        preheader: z.string().max(500).optional(),
      })
      .refine((c) => !!(c.html || c.text), { message: 'email content needs html or text', path: ['html'] }),
    sms: z.strictObject({ body: z.string().min(1).max(1600) }),
    push: z.strictObject({
      title: z.string().max(500).optional(),
      body: z.string().min(1).max(4000),
      data: data.optional(),
      badge: z.number().int().min(0).optional(),
      sound: z.string().max(200).optional(),
    }),
    'web-push': z.strictObject({
      title: z.string().min(1).max(500),
      body: z.string().max(4000).optional(),
      icon: z.string().max(2048).optional(),
      clickUrl: z.string().max(2048).optional(),
      data: data.optional(),
      badge: z.string().max(2048).optional(),
    }),
  };
}

// --- hints: how the dashboard shows a channel (it may import only the contract) ----------------

/** One content field as the template editor edits it: a line, a text area, a number or a JSON object. */
export interface ContentField {
  key: string;
  label: string;
  kind: 'line' | 'area' | 'number' | 'json';
}

export interface ChannelHints {
  label: string;
  /**
   * The content fields, in the editor's order. The `line` and `area` fields are Mustache templates
   * (rendering reads them from here too), `json` objects have their strings rendered, numbers none.
   */
  fields: readonly ContentField[];
  /** What a recipient of this channel is, for a form's hint and placeholder. */
  recipient: { hint: string; placeholder: string };
  /** Messages of this channel are MIME messages: an HTML preview, headers, a source and the message checks. */
  mime: boolean;
}

const dataField: ContentField = { key: 'data', label: 'Data (JSON object)', kind: 'json' };

export const CHANNEL_HINTS: Record<Channel, ChannelHints> = {
  email: {
    label: 'Email',
    fields: [
      { key: 'subject', label: 'Subject', kind: 'line' },
      { key: 'preheader', label: 'Preheader', kind: 'line' },
      { key: 'html', label: 'HTML body', kind: 'area' },
      { key: 'text', label: 'Text body', kind: 'area' },
    ],
    recipient: { hint: 'An email address.', placeholder: 'someone@example.com' },
    mime: true,
  },
  sms: {
    label: 'SMS',
    fields: [{ key: 'body', label: 'Body', kind: 'area' }],
    recipient: { hint: 'An E.164 phone number.', placeholder: '+14155550100' },
    mime: false,
  },
  push: {
    label: 'Push',
    fields: [
      { key: 'title', label: 'Title', kind: 'line' },
      { key: 'body', label: 'Body', kind: 'area' },
      { key: 'sound', label: 'Sound', kind: 'line' },
      { key: 'badge', label: 'Badge count', kind: 'number' },
      dataField,
    ],
    recipient: { hint: 'A device token (APNs or FCM).', placeholder: 'device token' },
    mime: false,
  },
  'web-push': {
    label: 'Web push',
    fields: [
      { key: 'title', label: 'Title', kind: 'line' },
      { key: 'body', label: 'Body', kind: 'area' },
      { key: 'icon', label: 'Icon URL', kind: 'line' },
      { key: 'clickUrl', label: 'Click URL', kind: 'line' },
      { key: 'badge', label: 'Badge URL', kind: 'line' },
      dataField,
    ],
    recipient: { hint: 'A web-push subscription, as JSON.', placeholder: '{"endpoint":"https://…","keys":{"p256dh":"…","auth":"…"}}' },
    mime: false,
  },
};
