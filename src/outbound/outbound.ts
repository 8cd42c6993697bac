// The outbound area's one entry point, built by the composition root: accept, read, cancel, the
// transport registry, the extension points other areas plug into (accept checks, hold checks) and
// the dispatcher's worker spec.
import type { Deps } from '../app.js';
import type { Channel } from '../templates/render.js';
import type { Worker, WorkerSpec } from '../lib/worker.js';
import { createAccept, type AcceptCheck, type AcceptResponse, type Sender, type TemplateResolver } from './accept.js';
import { cancelMessage } from './cancel.js';
import type { ChannelTransport } from './channels/channel.js';
import { createDispatcher, type HoldCheck, type SuppressHook } from './dispatcher.js';
import { rowToMessage, type Message } from './message.js';
import { createReader, type ListFilters, type Page, type Scope } from './read.js';
import { createRenderer, type Renderer } from './render-threads.js';
import { createTransportRegistry } from './transports.js';
import { createWriteBatcher } from './write-batcher.js';

export const DISPATCHER_WORKER = 'dispatcher';

export interface Outbound {
  accept(sender: Sender, body: unknown, opts: { raw: boolean; idempotencyKey?: string | null }): Promise<AcceptResponse>;
  get(scope: Scope, publicId: string): Promise<Message>;
  list(scope: Scope, filters: ListFilters): Promise<Page>;
  cancel(scope: Scope, publicId: string): Promise<Message>;
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
  /** Render threads, shared with the email transport for MIME composition and DKIM. */
  renderer: Renderer;
  /** Waits for deliveries in flight and releases leases (graceful stop). */
  stop(): Promise<void>;
}

export function createOutbound(deps: Deps & { templates: () => TemplateResolver | null }): Outbound {
  const transports = createTransportRegistry();
  const checks: AcceptCheck[] = [];
  const holds: HoldCheck[] = [];
  const suppressHooks: SuppressHook[] = [];
  const writes = createWriteBatcher(deps.db, deps.dialect, { windowMs: deps.config.dispatcher.commitWindowMs });
  let worker: Worker | undefined;
  const now = () => deps.clock.now().toISOString();

  const accept = createAccept({
    ...deps,
    writes,
    checks,
    accepted(row) {
      if (deps.bus.listening('message.changed')) deps.bus.publish('message.changed', rowToMessage(row));
      if (row.due_at !== null && row.due_at <= now()) worker?.wake();
    },
  });
  const reader = createReader(deps);
  const renderer = createRenderer({ threads: deps.config.dispatcher.renderThreads, log: deps.log });
  const dispatcher = createDispatcher({ ...deps, transports, holds, suppressHooks, writes, renderer });

  return {
    accept,
    get: reader.get,
    list: reader.list,
    async cancel(scope, publicId) {
      const m = await cancelMessage(deps.db, deps.clock, scope, publicId);
      deps.bus.publish('message.changed', m);
      return m;
    },
    registerTransport: (channel, transport) => transports.register(channel, transport),
    addAcceptCheck: (c) => void checks.push(c),
    addHoldCheck: (c) => void holds.push(c),
    addSuppressHook: (h) => void suppressHooks.push(h),
    workerSpec: { name: DISPATCHER_WORKER, intervalMs: deps.config.dispatcher.intervalMs, run: () => dispatcher.run() },
    attachWorker: (w) => void (worker = w),
    renderer,
    async stop() {
      await dispatcher.drain();
      await transports.closeAll();
      await renderer.close();
    },
  };
}
