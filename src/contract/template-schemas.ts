// The request bodies of the template routes (create, draft, update, render), here beside the
// template rules so the HTTP routes and the API description (http/openapi/) use the same schemas.
import { z } from 'zod';
import { CHANNELS, channelSchema } from './channels.js';
import { TEMPLATE_STATUSES } from './vocabulary.js';
import { descriptionSchema, slugSchema } from './template-content.js';

export const createTemplateBody = z.strictObject({
  slug: slugSchema,
  channel: channelSchema,
  description: descriptionSchema.optional(),
});

// content is checked against the template's channel by the store, which knows the channel.
export const draftBody = z.strictObject({
  content: z.record(z.string(), z.unknown(), { message: 'content must be an object' }),
  variables: z.unknown().optional(),
});

export const updateTemplateBody = z.strictObject({
  description: descriptionSchema.optional(),
  status: z.enum(TEMPLATE_STATUSES, { message: `status must be one of ${TEMPLATE_STATUSES.join(', ')}` }).optional(),
});

export const renderBody = z.strictObject({
  vars: z.record(z.string(), z.unknown(), { message: 'vars must be an object' }).default({}),
  version: z.number().int().min(1).optional(),
});

// What the template routes answer (templates/store.ts builds these shapes).
const variableOut = z.object({ name: z.string(), type: z.string(), description: z.string(), required: z.boolean() });

const contentOut = z.record(z.string(), z.unknown()).describe("the channel's content fields (see docs/templates.md)");

export const templateSummarySchema = z
  .object({
    slug: z.string(),
    channel: z.enum(CHANNELS),
    description: z.string(),
    status: z.enum(TEMPLATE_STATUSES),
    updatedAt: z.string(),
  })
  .meta({ id: 'TemplateSummary' });

export const templateVersionSchema = z
  .object({
    versionNumber: z.number().int(),
    status: z.enum(['draft', 'published']),
    content: contentOut,
    variables: z.array(variableOut),
    createdAt: z.string(),
    updatedAt: z.string(),
    publishedAt: z.string().nullable(),
  })
  .meta({ id: 'TemplateVersion' });

export const templateDetailSchema = templateSummarySchema
  .extend({
    createdAt: z.string(),
    currentVersion: z
      .object({ versionNumber: z.number().int(), variables: z.array(variableOut), publishedAt: z.string(), content: contentOut })
      .nullable(),
    draft: z.object({ versionNumber: z.number().int(), updatedAt: z.string() }).nullable(),
  })
  .meta({ id: 'Template' });

export const renderResultSchema = z.object({
  channel: z.enum(CHANNELS),
  output: z.record(z.string(), z.unknown()).describe('the rendered channel output (email: subject, html, text; sms: body; …)'),
  missing: z.array(z.string()),
});
