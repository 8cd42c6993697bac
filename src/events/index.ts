// The public face of events/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export type { EventBus } from './bus.js';
export { eventRow, insertEventRows, markFannedOut, markForwardChecked, type NewEvent, recordEvent, recordEvents } from './record.js';
