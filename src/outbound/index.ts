// Sending: accept, the queue, the dispatcher and its hooks, retries, cancel, purge and the message
// checks. This is the area's public face: the rest of the daemon imports only what it names (the
// `areas-through-their-face` rule).
export type { AcceptResponse, BatchItemResult, Sender } from './accept.js';
export { readBatchBody } from './batch-input.js';
export type { MessageCheckService } from './checks/checks.js';
export { renderRequestOf } from './dispatcher.js';
export type { Outbound } from './outbound.js';
export { purgeDestination } from './purge.js';
export { releaseDeferredTo } from './queue.js';
