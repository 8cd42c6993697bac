// Bounces of forwards. A forward goes out from an SRS address on the bounce domain (source.ts), so
// a remote MTA that accepts it and later cannot deliver it sends its DSN there, naming no VERP
// message. This finds the forward the DSN is about, for the bounce handler to fail it through the
// ledger like any bounced message: the SRS address must verify (our hash, at most 21 days old, as
// postsrsd honours them), and the message is the forward whose trace header the DSN returns
// (`Received: … with forwarding id msg_…`), or else the latest forward not yet failed to a
// recipient the DSN reports, in both cases of a received message from the sender the SRS address
// names.
//
// The DSN is recorded, not relayed to that sender (postsrsd would relay it). The sender's message
// was received and stored by Postern, which is its destination; the forward is a copy the workspace
// asked for, so its failure is the workspace's to see (the forward's message fails, with the event
// message.failed). Relaying would tell the sender a delivered message bounced, disclose the address
// forwarded to, and send backscatter to every forged sender of spam a catch-all forwards.
import type { ForwardedBounces } from '../channels/email/index.js';
import type { Deps } from '../deps.js';
import { srsSecret } from './keys.js';
import { srsReverse } from './srs.js';

/** How many recent forwards to a reported recipient are looked at when the DSN names none. */
const RECENT_FORWARDS = 20;

export function forwardBounces(deps: Pick<Deps, 'db' | 'clock'>): ForwardedBounces {
  const { db, clock } = deps;

  // The forward's message, when it exists and forwards mail that `sender` sent.
  const forwardFrom = async (publicId: string, sender: string): Promise<boolean> => {
    const row = await db
      .selectFrom('forwards as f')
      .innerJoin('received_messages as m', 'm.public_id', 'f.received_id')
      .select('m.envelope')
      .where('f.message_id', '=', publicId)
      .executeTakeFirst();
    return !!row && envelopeSender(row.envelope) === sender;
  };

  return {
    async messageFor({ raw, recipients, reported }) {
      const secret = await srsSecret(db, clock);
      const sender = recipients
        .map((r) => srsReverse(secret, r, clock.now()))
        .find((s) => s !== null)
        ?.toLowerCase();
      if (!sender) return null;
      const note = `the DSN came back to the forward's SRS address; recorded here, not relayed to the original sender ${sender}`;
      for (const [, publicId] of raw.toString('latin1').matchAll(/ with forwarding id (msg_[0-9A-Za-z]+)/g)) {
        if (await forwardFrom(publicId, sender)) return { publicId, note };
      }
      if (reported.length === 0) return null;
      // A forward that already failed has nothing left to fail: the report is about another one.
      const recent = await db
        .selectFrom('forwards as f')
        .innerJoin('received_messages as m', 'm.public_id', 'f.received_id')
        .innerJoin('messages as o', 'o.public_id', 'f.message_id')
        .select(['f.message_id', 'm.envelope'])
        .where('f.forward_to', 'in', reported)
        .where('o.status', 'in', ['dispatched', 'sent', 'delivered'])
        .orderBy('f.created_at', 'desc')
        .limit(RECENT_FORWARDS)
        .execute();
      const match = recent.find((r) => envelopeSender(r.envelope) === sender);
      return match?.message_id ? { publicId: match.message_id, note } : null;
    },
  };
}

/** The envelope sender of a received message, lowercase. */
function envelopeSender(envelope: string): string {
  const from = (JSON.parse(envelope) as { from?: unknown }).from;
  return typeof from === 'string' ? from.toLowerCase() : '';
}
