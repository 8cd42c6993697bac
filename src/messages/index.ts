// The public face of messages/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export type { Change, Ledger, LedgerObservation } from './ledger.js';
export { BLOCKED_NOTICE, type MessageRow, metadataStrings, metadataText, rowToMessage, rowToOutbound, searchText } from './message.js';
export { createReader, type ListFilters, matchesFilters, type Page, type Scope, scopedMessageRow } from './read.js';
export { createMessageStats } from './stats.js';
export type { Trigger } from './transitions.js';
