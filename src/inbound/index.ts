// The public face of inbound/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export type { AddressStore } from './addresses.js';
export type { PassedClients } from './passed-clients.js';
export { endsHeaderBlock, plainTextShortcut } from './plain-text.js';
export { type MailboxRoute, MessageRefused, type Receiver, SOURCE_HEADROOM } from './receive.js';
export type { ReceivedReader } from './received.js';
export type { Route, Router } from './routing.js';
export { rspamdVerdict } from './scan.js';
