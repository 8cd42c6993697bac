// The shapes a template is made of, as zod schemas: one content shape per channel (the same shape
// as an inline send's `content`), declared variables, and slug rules. Strict objects: an unknown
// field is a typo the caller wants to hear about, not something to store silently.
import { z } from 'zod';
import { CHANNELS, type Channel, type ChannelContent } from '../channel.js';

export const SLUG_PATTERN = /^[a-z0-9_-]{1,64}$/;

/** A slug as a request gives it: lowercased, then 1–64 of a-z, 0-9, `-`, `_`. */
export const slugSchema = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(z.string().regex(SLUG_PATTERN, 'slug must be 1-64 characters of a-z, 0-9, - and _'));

export const channelSchema = z.enum(CHANNELS, { message: `channel must be one of ${CHANNELS.join(', ')}` });

const text = (max: number) => z.string().max(max);
const data = z.record(z.string(), z.unknown());

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

/** The content schema of each channel; the send pipeline may use these for inline content too. */
export const contentSchemas: Record<Channel, z.ZodType<ChannelContent>> = {
  email,
  sms,
  push,
  'web-push': webPush,
};

/**
 * The content of an inline send (POST /v1/send with `content`): the fields of a template version's
 * content, with the limits inline sends have always had (a body of at most 1 MB, a preheader of
 * 500 characters; push and web-push titles of 500). They differ from the template limits above for
 * no reason worth keeping; aligning them changes what the API accepts, so it waits for an API change.
 */
const inlineText = z.string().max(1_000_000);
export const inlineContentSchemas: Record<Channel, z.ZodType> = {
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

const VARIABLE_TYPES = ['string', 'number', 'boolean', 'object', 'array'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

export interface Variable {
  name: string;
  type: VariableType;
  description: string;
  required: boolean;
}

const variableSchema = z.strictObject({
  // A Mustache path: names separated by dots.
  name: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$/, 'variable name must be a dotted path of letters, digits, _ and -')
    .max(128),
  type: z.enum(VARIABLE_TYPES, { message: `type must be one of ${VARIABLE_TYPES.join(', ')}` }).default('string'),
  description: text(500).default(''),
  required: z.boolean().default(false),
});

export const variablesSchema = z
  .array(variableSchema)
  .max(200)
  .default([])
  .superRefine((vars, ctx) => {
    const seen = new Set<string>();
    vars.forEach((v, i) => {
      if (seen.has(v.name)) ctx.addIssue({ code: 'custom', message: `variable ${v.name} is declared twice`, path: [i, 'name'] });
      seen.add(v.name);
    });
  });

export const descriptionSchema = text(500);
