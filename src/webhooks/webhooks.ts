// The webhooks capability as the composition root sees it: the endpoint store (API and CLI), and
// the deliverer worker, woken when a producer publishes `events.recorded` after its commit.
import type { Deps } from '../deps.js';
import type { Worker } from '../lib/worker.js';
import { createDeliverer, type Deliverer, type DelivererDeps } from './deliverer.js';
import { createEndpointStore, type EndpointStore } from './endpoints.js';

export interface Webhooks {
  endpoints: EndpointStore;
  deliverer: Deliverer;
  /** Connects the registry's worker so new events wake it at once. */
  attach(worker: Worker | undefined): void;
  close(): Promise<void>;
}

export function createWebhooks(deps: Deps & Pick<DelivererDeps, 'eventPayload' | 'observe'>): Webhooks {
  let worker: Worker | undefined;
  const deliverer = createDeliverer(deps);
  const wake = () => {
    deliverer.nudge();
    worker?.wake();
  };
  const endpoints = createEndpointStore({ ...deps, onWork: wake });
  // Events arrive in bursts (a busy SMTP listener records one per message). Fanning each out as it
  // comes costs one fsync'd commit per event; waiting `webhooks.fanoutDelay` after the first lets one
  // commit fan out the whole burst, for that much added latency.
  let lingering: NodeJS.Timeout | null = null;
  const wakeSoon = () => {
    if (deps.config.webhooks.fanoutDelay === 0) return wake();
    if (lingering) return;
    lingering = setTimeout(() => {
      lingering = null;
      wake();
    }, deps.config.webhooks.fanoutDelay);
  };
  const unsubscribe = deps.bus.subscribe('events.recorded', wakeSoon);
  // Abandon attempts in flight as soon as the app begins to stop, so stopping never waits on a
  // slow receiver; the deliveries stay in the outbox for the next start.
  const unsubscribeStop = deps.bus.subscribe('app.stopping', () => deliverer.stop());
  return {
    endpoints,
    deliverer,
    attach(w) {
      worker = w;
    },
    async close() {
      unsubscribe();
      if (lingering) clearTimeout(lingering);
      unsubscribeStop();
      await deliverer.close();
    },
  };
}
