// An OutboundMessage as the dispatcher hands it to a transport, for tests that call deliver()
// directly: every field at its plain default, overridden where a test cares.
import type { OutboundMessage } from '../../src/channel.js';

export function outboundMessage(over: Partial<OutboundMessage> = {}): OutboundMessage {
  return {
    id: '0190aaaa-bbbb-7ccc-8ddd-000000000001',
    publicId: 'msg_0000000000000000000001',
    workspaceId: 'ws',
    livemode: true,
    channel: 'email',
    recipient: 'alice@example.net',
    templateSlug: null,
    metadata: {},
    fromOverride: null,
    fromNameOverride: null,
    cc: [],
    bcc: [],
    replyTo: null,
    attachments: [],
    attempt: 1,
    createdAt: '2030-01-01T00:00:00.000Z',
    ...over,
  };
}
