// Forwarding of received mail, as the composition root sees it: the forwarder worker, the
// transport wrapper, the link from a received message to its forward, and the ARC DNS record.
import type { Deps } from '../app.js';
import { notFound } from '../lib/errors.js';
import type { Outbound } from '../outbound/outbound.js';
import type { Message } from '../outbound/message.js';
import type { ChannelTransport } from '../outbound/channels/channel.js';
import type { Worker, WorkerSpec } from '../lib/worker.js';
import { createForwarder } from './forwarder.js';
import { arcKey } from './keys.js';
import { arcDomainOf, withForwarding } from './transport.js';

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
  wrap(inner: ChannelTransport): ChannelTransport;
  /** The forward of a received message of this workspace and environment. */
  forwardOf(scope: { workspaceId: string; livemode: boolean }, receivedId: string): Promise<ForwardView>;
  /** The DNS TXT record receivers need to validate the ARC seal. */
  arcRecord(): Promise<{ name: string; type: 'TXT'; value: string }>;
}

export function createForwarding(deps: Deps, outbound: Outbound): Forwarding {
  let worker: Worker | undefined;
  deps.bus.subscribe('events.recorded', (p) => {
    const type = (p as { type?: string } | null)?.type;
    if (type === undefined || type === 'message.received') worker?.wake();
  });
  return {
    workerSpec: createForwarder(deps, outbound),
    attach: (w) => void (worker = w),
    wrap: (inner) => withForwarding(deps, inner),
    async forwardOf(scope, receivedId) {
      const row = await deps.db
        .selectFrom('forwards as f')
        .innerJoin('received_messages as m', 'm.public_id', 'f.received_id')
        .select(['f.received_id', 'f.forward_to', 'f.status', 'f.reason', 'f.message_id'])
        .where('f.received_id', '=', receivedId)
        .where('m.workspace_id', '=', scope.workspaceId)
        .where('m.livemode', '=', scope.livemode ? 1 : 0)
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
