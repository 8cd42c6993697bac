// Receiving: routing at RCPT TO, analysis (SPF, DKIM, DMARC, ARC, parsing), storing, received mail
// and addresses. This is the area's public face: the rest of the daemon imports only what it names
// (the `areas-through-their-face` rule).
export type { AddressStore } from './addresses.js';
export type { PassedClients } from './passed-clients.js';
export { endsHeaderBlock, plainTextShortcut } from './plain-text.js';
export { type MailboxRoute, MessageRefused, type Receiver, SOURCE_HEADROOM } from './receive.js';
export type { ReceivedReader } from './received.js';
export type { Route, Router } from './routing.js';
export { rspamdVerdict } from './scan.js';
