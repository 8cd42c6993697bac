// The transports the dispatcher hands messages to: the live transport of each channel (registered
// by the composition root from the channel registry), and the test channel, which every test-mode
// message goes to whatever its channel, so a test key can never reach a real provider.
import type { ChannelTransport } from '../channel.js';
import { createTestChannel } from '../channels/index.js';
import type { Channel } from '../contract/channels.js';

export interface TransportRegistry {
  /** Registers (or replaces) the live transport of a channel. */
  register(channel: Channel, transport: ChannelTransport): void;
  /** The transport for a message: the test transport in test mode; null when no live one is registered. */
  forMessage(channel: Channel, livemode: boolean): ChannelTransport | null;
  closeAll(): Promise<void>;
}

export function createTransportRegistry(test: ChannelTransport = createTestChannel()): TransportRegistry {
  const live = new Map<Channel, ChannelTransport>();
  return {
    register: (channel, transport) => void live.set(channel, transport),
    forMessage: (channel, livemode) => (livemode ? (live.get(channel) ?? null) : test),
    async closeAll() {
      for (const t of new Set(live.values())) await t.close?.();
    },
  };
}
