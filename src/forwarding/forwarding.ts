// Forwarding of received mail, as the composition root sees it: the forwarder worker, the bytes it
// hands the email channel, the forward a DSN to an SRS address is about, the link from a received
// message to its forward, and the ARC DNS record.
import type { ForwardedBounces, RawSource } from '../channels/email/index.js';
import { flag } from '../db/index.js';
import type { Deps } from '../deps.js';
import { notFound } from '../lib/errors.js';
import type { Worker, WorkerSpec } from '../lib/worker.js';
import type { Outbound } from '../outbound/index.js';
import { forwardBounces } from './bounces.js';
import { createForwarder } from './forwarder.js';
import { arcKey } from './keys.js';
import { arcDomainOf, forwardSource } from './source.js';
import type { Message } from '../contract/message-schemas.js';

export interface ForwardView {
  receivedId: string;
  forwardTo: string;
  /** queued: an outbound message carries it (see `message`); skipped: loop; refused: quota or caps. */
  status: string;
  reason: string | null;
  /** The outbound message (status, error, timeline), or null when none was made. */
  message: Message | null;
}

export interface Forwarding {
  workerSpec: WorkerSpec;
  /** Connects the registry's worker so received mail wakes it at once. */
  attach(worker: Worker | undefined): void;
  /** The bytes of forwards, for the email channel to send. */
  source: RawSource;
  /** Which forward a DSN to an SRS address is about, for the bounce handler. */
  bounces: ForwardedBounces;
  /** The forward of a received message of this workspace and environment. */
  forwardOf(scope: { workspaceId: string; livemode: boolean }, receivedId: string): Promise<ForwardView>;
  /** The DNS TXT record receivers need to validate the ARC seal. */
  arcRecord(): Promise<{ name: string; type: 'TXT'; value: string }>;
}

export function createForwarding(deps: Deps, outbound: Outbound): Forwarding {
  let worker: Worker | undefined;
  deps.bus.subscribe('events.recorded', ({ type }) => {
    if (type === 'message.received') worker?.wake();
  });
  return {
    workerSpec: createForwarder(deps, outbound),
    attach: (w) => void (worker = w),
    source: forwardSource(deps),
    bounces: forwardBounces(deps),
    async forwardOf(scope, receivedId) {
      const row = await deps.db
        .selectFrom('forwards as f')
        .innerJoin('received_messages as m', 'm.public_id', 'f.received_id')
        .select(['f.received_id', 'f.forward_to', 'f.status', 'f.reason', 'f.message_id'])
        .where('f.received_id', '=', receivedId)
        .where('m.workspace_id', '=', scope.workspaceId)
        .where('m.livemode', '=', flag(scope.livemode))
        .executeTakeFirst();
      if (!row) throw notFound('forward');
      const message = row.message_id ? await outbound.get(scope, row.message_id) : null;
      return { receivedId: row.received_id, forwardTo: row.forward_to, status: row.status, reason: row.reason, message };
    },
    async arcRecord() {
      const key = await arcKey(deps.db, deps.clock);
      return {
        name: `${deps.config.forwarding.arcSelector}._domainkey.${arcDomainOf(deps.config)}`,
        type: 'TXT',
        value: `v=DKIM1; k=rsa; p=${key.publicKey}`,
      };
    },
  };
}
