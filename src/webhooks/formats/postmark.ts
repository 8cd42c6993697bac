// Postmark's webhooks (https://postmarkapp.com/developer/webhooks/webhooks-overview): one JSON
// object per POST whose `RecordType` says what happened (Delivery, Bounce, Open, Click), with
// Postmark's field names; `Metadata` values are strings, as Postmark's are. Postmark signs
// nothing (receivers put basic-auth credentials in the URL, which Postern sends as an
// Authorization header); Postern's own Standard Webhooks headers ride along for receivers that
// check them.
import { metadataStrings } from '../../messages/index.js';
import { signatureHeaders } from '../signing.js';
import { messageOf, type EventMessage, type PayloadFormat } from './format.js';
import type { EventType } from '../../contract/webhooks.js';

const common = (m: EventMessage) => ({
  MessageID: m.publicId,
  MessageStream: 'outbound',
  Tag: typeof m.metadata?.tag === 'string' ? m.metadata.tag : '',
  Metadata: metadataStrings(m.metadata ?? {}),
});

const RECORDS: Partial<Record<EventType, (m: EventMessage, at: string) => Record<string, unknown>>> = {
  'message.delivered': (m, at) => ({ RecordType: 'Delivery', Recipient: m.recipient, DeliveredAt: at, Details: '' }),
  'message.failed': (m, at) => ({
    RecordType: 'Bounce',
    Type: 'HardBounce',
    TypeCode: 1,
    Name: 'Hard bounce',
    Email: m.recipient,
    From: m.fromOverride ?? '',
    BouncedAt: at,
    Description: 'The server was unable to deliver your message (ex: unknown user, mailbox not found).',
    Details: m.error ?? '',
    DumpAvailable: false,
    Inactive: true,
    CanActivate: true,
  }),
  'message.opened': (m, at) => ({ RecordType: 'Open', Recipient: m.recipient, ReceivedAt: m.openedAt ?? at, FirstOpen: true }),
  'message.clicked': (m, at) => ({
    RecordType: 'Click',
    Recipient: m.recipient,
    ReceivedAt: m.clickedAt ?? at,
    OriginalLink: m.link ?? '',
    ClickLocation: 'HTML',
  }),
};

export const postmark: PayloadFormat = {
  types: Object.keys(RECORDS) as EventType[],
  body(ev) {
    const m = messageOf(ev);
    return JSON.stringify({ ...RECORDS[ev.type]!(m, ev.createdAt), ...common(m) });
  },
  sign: (ev, body, timestamp, keys) => signatureHeaders(keys.secrets, ev.id, timestamp, body),
};
