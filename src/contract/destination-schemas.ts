// Email destinations as the API shows them, and the query and bodies of their routes, as zod
// schemas.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';
import { DESTINATION_HOLDS } from './destinations.js';

/** A destination as the API shows it. */
export const destinationSchema = z
  .object({
    domain: z.string(),
    delivered: z.number().int(),
    deferred: z.number().int(),
    bounced: z.number().int(),
    lastError: z.string().nullable(),
    lastCategory: z.string().nullable(),
    lastErrorAt: z.string().nullable(),
    suspended: z.enum(DESTINATION_HOLDS).nullable(),
    backoffUntil: z.string().nullable(),
    backoffReason: z.string().nullable(),
    adaptiveBackoff: z
      .object({
        rate: z.number().int().meta({ description: 'messages a minute, the whole cluster’s' }),
        targetRate: z.number().int().meta({ description: 'the rate it climbs back to' }),
        connections: z.number().int().meta({ description: 'connections per host, the whole cluster’s' }),
        since: z.string().meta({ description: 'when the destination first throttled' }),
        lastAnswer: z.string(),
        lastAnswerAt: z.string(),
        throttles: z.number().int(),
      })
      .nullable()
      .meta({ description: 'the lowered rate and connections of a destination that throttles, or null at full speed' }),
  })
  .meta({ id: 'Destination' });

/** GET /v1/destinations: pages of 1 to 200, ordered by domain; `after` is the last domain seen. */
export const destinationsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).optional(),
  after: z.string().max(253).optional(),
});

/** POST /v1/destinations/{domain}/suspend. */
export const suspendBody = z.strictObject({ reason: z.string().min(1).max(200).optional() });

/** POST /v1/destinations/{domain}/purge: what to drop (both when absent). */
export const purgeBody = z.strictObject({ status: z.enum(['queued', 'deferred']).optional() });
