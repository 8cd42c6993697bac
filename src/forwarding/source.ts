// The bytes of a forward. A message tagged `metadata.forwardOf` is sent as the original received
// source (compose.ts: trace headers and an ARC seal above it) from an SRS envelope sender; this is
// handed to the email channel, which sends it on its one path (direct or relay, its pool, its
// retries, its outcomes) like any other email. Every other message is composed as usual.
import type { Delivery } from '../channel.js';
import type { RawSource, WireMessage } from '../channels/email/index.js';
import type { Config } from '../config.js';
import type { Deps } from '../deps.js';
import { bounceDomainOf } from '../domains/index.js';
import { composeForward } from './compose.js';
import { arcKey, srsSecret } from './keys.js';
import { srsForward } from './srs.js';

/** The ARC signing domain: `forwarding.arcDomain`, else the host name. */
export const arcDomainOf = (config: Config) => config.forwarding.arcDomain || config.hostname.toLowerCase();

export function forwardSource(deps: Pick<Deps, 'config' | 'db' | 'clock'>): RawSource {
  const { config, db, clock } = deps;

  async function forward(delivery: Delivery, receivedId: string): Promise<WireMessage | { gone: string }> {
    const m = delivery.message;
    const rcv = await db
      .selectFrom('received_messages as m')
      .innerJoin('inbound_raw as r', 'r.id', 'm.raw_id')
      .select(['m.envelope', 'm.parsed', 'r.source'])
      .where('m.public_id', '=', receivedId)
      .where('m.workspace_id', '=', m.workspaceId)
      .executeTakeFirst();
    if (!rcv?.source) return { gone: `the original of ${receivedId} is no longer stored` };
    const envelope = JSON.parse(rcv.envelope) as { from: string };
    const arcResult = (JSON.parse(rcv.parsed) as { verdicts?: { arc?: { result?: string } } }).verdicts?.arc?.result ?? 'none';
    const cv = arcResult === 'pass' ? 'pass' : arcResult === 'fail' ? 'fail' : 'none';
    const now = clock.now();
    const raw = await composeForward({
      raw: Buffer.from(rcv.source),
      receivedId,
      messageId: m.publicId,
      to: m.recipient,
      hostname: config.hostname,
      date: now,
      arc: { domain: arcDomainOf(config), selector: config.forwarding.arcSelector, key: await arcKey(db, clock), cv },
    });
    const envelopeFrom = srsForward(await srsSecret(db, clock), envelope.from, bounceDomainOf(config), now);
    // The bytes keep the original Message-ID; the forward has none of its own to report.
    return { raw, messageId: null, envelopeFrom };
  }

  return async (delivery) => {
    const forwardOf = delivery.message.metadata.forwardOf;
    return typeof forwardOf === 'string' && forwardOf.startsWith('rcv_') ? forward(delivery, forwardOf) : null;
  };
}
