// The in-process event bus: how a state change reaches live listeners (SSE tails, workers waiting
// for work) without polling. It is not durable; anything that must survive a crash is written to
// the `events` table (events/record.ts) in the same transaction as the change that caused it. The
// topics and what each carries are one typed map, so a publisher and its subscribers cannot
// disagree about a payload.
import { EventEmitter } from 'node:events';
import type { EventType } from '../contract/webhooks.js';

/** The topics and their payloads. A message's own changes are announced by the ledger (Ledger.watch). */
export interface Topics {
  /** Rows were added to the `events` outbox (after their commit): webhook fan-out and forwarding wake. */
  'events.recorded': { type: EventType };
  /**
   * A domain started or stopped receiving or signing mail, or was removed: what is cached of
   * domains (inbound routing, sending keys) is forgotten. Shared with a cluster's other nodes.
   */
  'domains.changed': null;
  /** The daemon began to stop: long-lived responses end, workers abandon slow attempts. */
  'app.stopping': null;
}

export type Topic = keyof Topics;

export interface EventBus {
  publish<T extends Topic>(topic: T, payload: Topics[T]): void;
  /** Returns the function that unsubscribes. */
  subscribe<T extends Topic>(topic: T, listener: (payload: Topics[T]) => void): () => void;
  /** True when a listener is subscribed: a publisher may skip building a payload nobody reads. */
  listening(topic: Topic): boolean;
}

export function createEventBus(): EventBus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    publish: (topic, payload) => {
      emitter.emit(topic, payload);
    },
    subscribe: (topic, listener) => {
      emitter.on(topic, listener as (payload: unknown) => void);
      return () => emitter.off(topic, listener as (payload: unknown) => void);
    },
    listening: (topic) => emitter.listenerCount(topic) > 0,
  };
}
