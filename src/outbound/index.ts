// The public face of outbound/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export type { AcceptResponse, BatchItemResult, Sender } from './accept.js';
export { readBatchBody } from './batch-input.js';
export type { MessageCheckService } from './checks/checks.js';
export { renderRequestOf } from './dispatcher.js';
export type { Outbound } from './outbound.js';
export { purgeDestination } from './purge.js';
export { releaseDeferredTo } from './queue.js';
