// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// What a node has under way (deliveries handed to a transport and not settled) only the node itself
// knows: each node writes the count into its row on every heartbeat, for the node view
// (`GET /v1/nodes`) and the `postern_node_in_flight` gauge. A node's claimed messages need no column:
// they are counted from the queue's leases (`<node id>.<claim>`).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('nodes')
    .addColumn('in_flight', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('nodes').dropColumn('in_flight').execute();
}
