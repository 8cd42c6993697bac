// What happened, recorded: the event log's one writer and the in-process bus. This is the area's
// public face: the rest of the daemon imports only what it names (the `areas-through-their-face`
// rule).
export type { EventBus } from './bus.js';
export { eventRow, insertEventRows, markFannedOut, markForwardChecked, type NewEvent, recordEvent, recordEvents } from './record.js';
