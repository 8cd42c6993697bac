// The request bodies of the template routes (create, draft, update, render), here beside the
// template rules so the HTTP routes and the API description (http/openapi/) use the same schemas.
import { z } from 'zod';
import { TEMPLATE_STATUSES } from '../db/schema.js';
import { channelSchema } from '../contract/channels.js';
import { descriptionSchema, slugSchema } from './content.js';

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
