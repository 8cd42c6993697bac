// A loopback-capturing transport for tests: records every delivery it is handed and answers with
// scripted outcomes (delivered by default). Register it in place of a live transport with
// `app.outbound.registerTransport(channel, capture)`; it can also hold deliveries until released,
// to stage races (a slow channel, a cancel while in flight).
import type { ChannelTransport, Delivery, DeliveryOutcome } from '../../src/channel.js';

export interface CaptureTransport extends ChannelTransport {
  readonly deliveries: Delivery[];
  /** Outcome for the next deliveries, in order; after they run out, `fallback` answers. */
  script(...outcomes: Array<DeliveryOutcome | ((d: Delivery) => DeliveryOutcome | Promise<DeliveryOutcome>)>): void;
  fallback: (d: Delivery) => DeliveryOutcome | Promise<DeliveryOutcome>;
  /** Resolves once at least n deliveries were handed over. */
  waitFor(n: number): Promise<Delivery[]>;
  /** While held, deliver() waits until release() is called. */
  hold(): void;
  release(): void;
}

export function createCaptureTransport(name = 'capture'): CaptureTransport {
  const deliveries: Delivery[] = [];
  const scripted: Array<DeliveryOutcome | ((d: Delivery) => DeliveryOutcome | Promise<DeliveryOutcome>)> = [];
  const waiters: Array<{ n: number; resolve: (d: Delivery[]) => void }> = [];
  let gate: Promise<void> | null = null;
  let open: (() => void) | null = null;
  const t: CaptureTransport = {
    name,
    deliveries,
    fallback: () => ({ kind: 'delivered', provider: name, providerMessageId: `cap_${deliveries.length}` }),
    script: (...outcomes) => void scripted.push(...outcomes),
    waitFor(n) {
      if (deliveries.length >= n) return Promise.resolve(deliveries);
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    hold() {
      gate ??= new Promise((r) => (open = r));
    },
    release() {
      open?.();
      gate = null;
      open = null;
    },
    async deliver(d) {
      deliveries.push(d);
      for (const w of [...waiters]) {
        if (deliveries.length >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(deliveries);
        }
      }
      if (gate) await gate;
      const next = scripted.shift();
      if (next === undefined) return t.fallback(d);
      return typeof next === 'function' ? next(d) : next;
    },
  };
  return t;
}
