// The test channel: every test-mode message (sk_test_ keys) ends here, whatever its channel. It never
// contacts anything and completes the message as delivered, unless the recipient is one of the
// documented outcome-simulating ones (../simulation.ts; each channel's spec reads its recipients).
import type { ChannelTransport, DeliveryOutcome, OutboundMessage } from '../../channel.js';
import type { Simulation } from '../simulation.js';
import type { Channel } from '../../contract/channels.js';

/** The test transport; `simulation` says what a recipient of a channel simulates (the registry's). */
export function createTestTransport(simulation: (channel: Channel, recipient: string) => Simulation | null): ChannelTransport {
  return {
    name: 'test',
    deliver: ({ message }) => Promise.resolve(outcomeFor(message, simulation(message.channel, message.recipient))),
  };
}

function outcomeFor(message: OutboundMessage, simulated: Simulation | null): DeliveryOutcome {
  const provider = 'test';
  const providerMessageId = `test_${message.publicId}`;
  switch (simulated) {
    case 'failed':
      return { kind: 'failed', provider, error: 'simulated permanent failure (test recipient)', suppress: true };
    case 'suppressed':
      return { kind: 'suppressed', provider, error: 'simulated suppression (test recipient)' };
    case 'deferred':
      if (message.attempt <= 1) return { kind: 'deferred', provider, error: 'simulated temporary failure (test recipient)' };
      return { kind: 'delivered', provider, providerMessageId };
    case 'sent':
      return { kind: 'sent', provider, providerMessageId };
    default:
      return { kind: 'delivered', provider, providerMessageId };
  }
}
