// A connection as GET /v1/connections shows it, as a zod schema.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';
import { CHANNELS } from './channels.js';

/**
 * A connection as GET /v1/connections shows it (connectionView here, emailConnectionView for the
 * configured email transport, which says `source: "config"`), never a secret: only its name.
 */
export const connectionViewSchema = z
  .object({
    id: z.string(),
    env: z.enum(['live', 'test']),
    channel: z.enum(CHANNELS),
    provider: z.string(),
    name: z.string(),
    settings: z.record(z.string(), z.unknown()),
    credentials: z.array(z.object({ name: z.string(), set: z.literal(true) })),
    createdAt: z.string().optional(),
    removedAt: z.string().optional(),
    source: z.literal('config').optional(),
  })
  .meta({ id: 'Connection' });
