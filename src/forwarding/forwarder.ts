// The forwarder: for each message.received event whose address has `forwardTo`, it queues one
// outbound email message through the normal outbound engine (queue, dispatcher, retries,
// timeline, lifecycle events), tagged `metadata.forwardOf = rcv_…`; the forwarding transport
// (transport.ts) then sends the original source instead of composing one. The idempotency key
// `forward-<rcv id>` makes a crash between accept and the `forward_checked` mark harmless. Mail
// that Postern already forwarded, or with too many hops, is not forwarded again (loops), and a
// refused accept (quota, sender caps) is recorded: every outcome is a row in `forwards`.
import { type ForwardStatus, isSet } from '../db/index.js';
import type { Deps } from '../deps.js';
import { markForwardChecked } from '../events/index.js';
import { isAppError } from '../lib/errors.js';
import type { WorkerSpec } from '../lib/worker.js';
import type { Outbound } from '../outbound/index.js';
import { loopReason } from './compose.js';

const FORWARDER_WORKER = 'forwarder';

export function createForwarder(deps: Deps, outbound: Outbound): WorkerSpec {
  const { db, clock, ids, config, log } = deps;

  async function record(
    ev: { seq: number },
    row: {
      receivedId: string;
      workspaceId: string;
      forwardTo: string;
      messageId: string | null;
      status: ForwardStatus;
      reason: string | null;
    } | null,
  ) {
    await db.transaction().execute(async (trx) => {
      if (row) {
        await trx
          .insertInto('forwards')
          .values({
            id: ids.uuid(),
            received_id: row.receivedId,
            workspace_id: row.workspaceId,
            forward_to: row.forwardTo,
            message_id: row.messageId,
            status: row.status,
            reason: row.reason,
            created_at: clock.now().toISOString(),
          })
          .onConflict((oc) => oc.column('received_id').doNothing())
          .execute();
      }
      await markForwardChecked(trx, ev.seq);
    });
  }

  async function handle(ev: { seq: number; data: string }): Promise<void> {
    const receivedId = (JSON.parse(ev.data) as { id?: string }).id;
    const rcv = receivedId
      ? await db
          .selectFrom('received_messages as m')
          .innerJoin('inbound_addresses as a', 'a.id', 'm.address_id')
          .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
          .innerJoin('inbound_raw as r', 'r.id', 'm.raw_id')
          .select(['m.public_id', 'm.workspace_id', 'm.livemode', 'm.subject', 'a.forward_to', 'w.plan', 'r.source'])
          .where('m.public_id', '=', receivedId)
          .executeTakeFirst()
      : undefined;
    if (!rcv || !rcv.forward_to) return record(ev, null);
    const base = { receivedId: rcv.public_id, workspaceId: rcv.workspace_id, forwardTo: rcv.forward_to };
    const loop = rcv.source
      ? loopReason(Buffer.from(rcv.source), config.hostname, config.forwarding.maxHops)
      : 'the original source is no longer stored';
    if (loop) {
      log.warn({ received: rcv.public_id, reason: loop }, 'not forwarded');
      return record(ev, { ...base, messageId: null, status: 'skipped', reason: loop });
    }
    try {
      const res = await outbound.accept(
        { workspace: { id: rcv.workspace_id, plan: rcv.plan }, livemode: isSet(rcv.livemode) },
        {
          to: rcv.forward_to,
          channel: 'email',
          // Never rendered: the forwarding transport sends the original source. Kept for listings.
          content: { subject: rcv.subject || '(no subject)', text: `Forward of ${rcv.public_id}` },
          metadata: { forwardOf: rcv.public_id },
        },
        { raw: true, idempotencyKey: `forward-${rcv.public_id}` },
      );
      await record(ev, { ...base, messageId: res.id, status: 'queued', reason: null });
    } catch (err) {
      if (!isAppError(err)) throw err;
      log.warn({ received: rcv.public_id, code: err.code, err: err.message }, 'forward refused');
      await record(ev, { ...base, messageId: null, status: 'refused', reason: `${err.code}: ${err.message}` });
    }
  }

  return {
    name: FORWARDER_WORKER,
    intervalMs: config.forwarding.pollInterval,
    async run() {
      const events = await db
        .selectFrom('events')
        .select(['seq', 'data'])
        .where('forward_checked', '=', 0)
        .where('type', '=', 'message.received')
        .orderBy('seq')
        .limit(50)
        .execute();
      // Only message.received rows are ever looked at (the index leads with forward_checked, type).
      for (const ev of events) await handle(ev);
      return events.length > 0;
    },
  };
}
