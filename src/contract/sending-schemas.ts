// What the send routes answer (202), as zod schemas.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';

/** What POST /v1/send and /v1/send-raw answer (202), as a zod schema for the API description. */
export const acceptResponseSchema = z.object({ id: z.string(), status: z.enum(['queued', 'scheduled']), livemode: z.boolean() });

/** What POST /v1/send/batch answers (202): one result per message, in order. */
export const batchResponseSchema = z.object({
  data: z.array(
    z.union([
      acceptResponseSchema,
      z.object({
        error: z.object({
          code: z.string(),
          message: z.string(),
          issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
        }),
      }),
    ]),
  ),
});
