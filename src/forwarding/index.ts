// Forwarding of received mail: the rules, SRS, the forward composed and the forwarder worker. This
// is the area's public face: the rest of the daemon imports only what it names (the `areas-through-
// their-face` rule).
export type { Forwarding } from './forwarding.js';
