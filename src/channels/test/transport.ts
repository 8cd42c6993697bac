// The test channel: every test-mode message (sk_test_ keys) ends here, whatever its channel. It never
// contacts anything and completes the message as delivered, unless the recipient is one of the
// documented outcome-simulating ones (recipients.ts).
import type { ChannelTransport, DeliveryOutcome, OutboundMessage } from '../../channel.js';
import { simulationFor } from './recipients.js';

export function createTestTransport(): ChannelTransport {
  return {
    name: 'test',
    deliver: ({ message }) => Promise.resolve(outcomeFor(message)),
  };
}

function outcomeFor(message: OutboundMessage): DeliveryOutcome {
  const provider = 'test';
  const providerMessageId = `test_${message.publicId}`;
  switch (simulationFor(message.channel, message.recipient)) {
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
