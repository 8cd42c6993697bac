// The box's nodes as GET /v1/nodes shows them, as zod schemas.
// Part of the contract (src/contract/): it imports zod and other contract files only, so the
// daemon, the dashboard (types) and the SDK generator read the same shapes.
import { z } from 'zod';

/** How a node's heartbeat looks to the others; see healthOf. */
export const NODE_HEALTHS = ['ok', 'late', 'gone'] as const;
export type NodeHealth = (typeof NODE_HEALTHS)[number];

/** A node as the API answers it (GET /v1/nodes), for the API description. */
const nodeViewSchema = z.object({
  id: z.string(),
  host: z.string(),
  pid: z.number().int(),
  version: z.string(),
  startedAt: z.string(),
  heartbeatAt: z.string(),
  health: z.enum(NODE_HEALTHS),
  stopping: z.boolean(),
  self: z.boolean(),
  inFlight: z.number().int(),
  claimed: z.number().int(),
});

/** GET /v1/nodes: the nodes, and the timings their health is judged by. */
export const nodeListSchema = z.object({
  data: z.array(nodeViewSchema),
  heartbeatMs: z.number().int(),
  nodeTimeoutMs: z.number().int(),
});
