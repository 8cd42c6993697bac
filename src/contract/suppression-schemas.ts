// The suppression list as the API shows it: an entry, the body that adds one, the query that
// lists them and what an import did, as zod schemas.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';
import { SUPPRESSION_REASONS } from './vocabulary.js';

/** The Suppression JSON as a zod schema, for the API description. */
export const suppressionSchema = z
  .object({
    address: z.string(),
    reason: z.enum(SUPPRESSION_REASONS),
    detail: z.string().nullable(),
    messageId: z.string().nullable(),
    createdAt: z.string(),
    expiresAt: z.string().nullable(),
  })
  .meta({ id: 'Suppression' });

/** A wildcard entry: `*@` and a domain name. */
export const WILDCARD = /^\*@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/i;

/** The body of POST /v1/suppressions (and the dashboard's add). */
export const addSuppressionBody = z.strictObject({
  address: z.union([z.email().max(320), z.string().regex(WILDCARD, 'must be an email address or *@domain')]),
  reason: z.enum(SUPPRESSION_REASONS).default('manual'),
  detail: z.string().max(500).optional(),
  expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a time zone' }).optional(),
});

/** The query of GET /v1/suppressions. */
export const listSuppressionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(1000).optional(),
  before: z.iso.datetime({ offset: true }).optional(),
  reason: z.enum(SUPPRESSION_REASONS).optional(),
  q: z.string().max(320).optional(),
});

/** The ImportResult as a zod schema, for the API description. */
export const importResultSchema = z.object({
  lines: z.number(),
  stored: z.number(),
  unchanged: z.number(),
  refused: z.number(),
  errors: z.array(z.object({ line: z.number(), message: z.string() })),
});
