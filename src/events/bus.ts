// The in-process event bus: how a state change reaches live listeners (SSE tails, workers waiting
// for work) without polling. It is not durable; anything that must survive a crash is written to
// the `events` table (events/record.ts) in the same transaction as the change that caused it.
import { EventEmitter } from 'node:events';

export interface EventBus {
  publish(topic: string, payload: unknown): void;
  /** Returns the function that unsubscribes. */
  subscribe(topic: string, listener: (payload: unknown) => void): () => void;
  /** True when a listener is subscribed: a publisher may skip building a payload nobody reads. */
  listening(topic: string): boolean;
}

export function createEventBus(): EventBus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    publish: (topic, payload) => {
      emitter.emit(topic, payload);
    },
    subscribe: (topic, listener) => {
      emitter.on(topic, listener);
      return () => emitter.off(topic, listener);
    },
    listening: (topic) => emitter.listenerCount(topic) > 0,
  };
}
