// The outbound area's one entry point, built by the composition root: accept, read, cancel, the
// transport registry, the extension points other areas plug into (accept checks, hold checks,
// suppress hooks) and the dispatcher's worker spec.
import type { ChannelTransport } from '../channel.js';
import type { Deps } from '../deps.js';
import type { Worker, WorkerSpec } from '../lib/worker.js';
import { createReader, type Ledger, type ListFilters, type Page, type Scope } from '../messages/index.js';
import {
  createAccept,
  usageShardOf,
  type AcceptCheck,
  type AcceptResponse,
  type BatchResponse,
  type Sender,
  type TemplateResolver,
} from './accept.js';
import type { BatchMode } from '../contract/sending-schemas.js';
import { cancelMessage } from './cancel.js';
import { retryMessageNow } from './retry-now.js';
import { createDispatcher, type HoldCheck, type Renderer, type SuppressHook } from './dispatcher.js';
import { createTransportRegistry } from './transports.js';
import type { Channel } from '../contract/channels.js';
import type { Message } from '../contract/message-schemas.js';

export const DISPATCHER_WORKER = 'dispatcher';

export interface Outbound {
  accept(sender: Sender, body: unknown, opts: { raw: boolean; idempotencyKey?: string | null }): Promise<AcceptResponse>;
  /** Accepts several sends in one transaction: all are committed or none (SMTP submission). */
  acceptMany(sender: Sender, items: { body: unknown; raw: boolean; idempotencyKey?: string | null }[]): Promise<AcceptResponse[]>;
  /** POST /v1/send/batch: sends committed together, refused all at once (`atomic`) or item by item (`partial`). */
  acceptBatch(
    sender: Sender,
    items: { body: unknown; raw: boolean; idempotencyKey?: string | null }[],
    opts: { mode: BatchMode; key: string | null },
  ): Promise<BatchResponse>;
  get(scope: Scope, publicId: string): Promise<Message>;
  list(scope: Scope, filters: ListFilters): Promise<Page>;
  cancel(scope: Scope, publicId: string): Promise<Message>;
  /** Makes a deferred message due now (409 conflict for any other); wakes the dispatcher. */
  retryNow(scope: Scope, publicId: string): Promise<Message>;
  /** Registers the live transport of a channel (test mode always uses the test transport). */
  registerTransport(channel: Channel, transport: ChannelTransport): void;
  /** Adds an accept-time check (e.g. sender caps); it throws an AppError to refuse a send. */
  addAcceptCheck(check: AcceptCheck): void;
  /** Adds a hold check run before dispatch (suppression list, unsubscribes). */
  addHoldCheck(check: HoldCheck): void;
  /** Adds a hook told of permanent failures that ask for the recipient to be suppressed. */
  addSuppressHook(hook: SuppressHook): void;
  workerSpec: WorkerSpec;
  /** Lets accept wake the dispatcher as soon as a message is committed. */
  attachWorker(worker: Worker | undefined): void;
  /** Stops claiming due messages at once: the first thing a stop does. */
  stopClaiming(): void;
  /** Deliveries under way on this node now (handed to the dispatcher's slots, not settled). */
  inFlight(): number;
  /** Gives back unstarted work, waits up to `drainMs` for deliveries in flight (graceful stop). */
  stop(drainMs?: number): Promise<void>;
}

export interface OutboundDeps extends Deps {
  ledger: Ledger;
  templates: TemplateResolver;
  /** Where messages are rendered (delivery threads, or the event loop). */
  threads: Renderer;
  /** This node's id in the cluster (the prefix of its leases). */
  nodeId?: string;
}

export function createOutbound(deps: OutboundDeps): Outbound {
  const transports = createTransportRegistry();
  const checks: AcceptCheck[] = [];
  const holds: HoldCheck[] = [];
  const suppressHooks: SuppressHook[] = [];
  let worker: Worker | undefined;

  const { accept, acceptMany, acceptBatch } = createAccept({
    ...deps,
    checks,
    // Each node of a cluster counts usage in a shard of its own (accept.ts, countUsage).
    usageShard: deps.dialect === 'postgres' && deps.nodeId ? usageShardOf(deps.nodeId) : 0,
    // Every accept wakes the dispatcher, a scheduled one too: the pass finds it not yet due and
    // notes when it falls due, so the worker wakes for it then rather than at its next interval
    // (which may be minutes away). Passes asked for while one runs fold into one more.
    accepted() {
      worker?.wake();
    },
  });
  const reader = createReader(deps);
  const dispatcher = createDispatcher({ ...deps, transports, holds, suppressHooks, wake: () => worker?.wake() });

  return {
    accept,
    acceptMany,
    acceptBatch,
    get: (scope, publicId) => reader.get(scope, publicId),
    list: (scope, filters) => reader.list(scope, filters),
    cancel: (scope, publicId) => cancelMessage(deps.ledger, scope, publicId),
    async retryNow(scope, publicId) {
      const m = await retryMessageNow(deps.ledger, deps.clock, scope, publicId);
      worker?.wake();
      return m;
    },
    registerTransport: (channel, transport) => transports.register(channel, transport),
    addAcceptCheck: (c) => void checks.push(c),
    addHoldCheck: (c) => void holds.push(c),
    addSuppressHook: (h) => void suppressHooks.push(h),
    workerSpec: {
      name: DISPATCHER_WORKER,
      intervalMs: deps.config.dispatcher.interval,
      run: (opts) => dispatcher.run(opts),
      nextPassIn: () => dispatcher.nextPassIn(),
    },
    attachWorker: (w) => void (worker = w),
    stopClaiming: () => dispatcher.stopClaiming(),
    inFlight: () => dispatcher.inFlight(),
    async stop(drainMs = deps.config.shutdown.drainSeconds * 1000) {
      await dispatcher.drain(drainMs);
      await transports.closeAll();
    },
  };
}
