// The outbound message ledger (the one writer of a message's state), its reads, transitions and
// stats. This is the area's public face: the rest of the daemon imports only what it names (the
// `areas-through-their-face` rule).
export type { Change, Ledger, LedgerObservation } from './ledger.js';
export {
  BLOCKED_NOTICE,
  type ContentRow,
  type MessageContent,
  type MessageRow,
  metadataStrings,
  metadataText,
  rowToMessage,
  rowToOutbound,
  searchText,
} from './message.js';
export {
  createReader,
  type ListFilters,
  matchesFilters,
  type Page,
  type Scope,
  scopedContentRow,
  scopedMessageRow,
  withContents,
} from './read.js';
export { createMessageStats } from './stats.js';
export type { Trigger } from './transitions.js';
