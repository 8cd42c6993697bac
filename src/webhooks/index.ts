// Webhooks: endpoints, the fan-out of events to deliveries, signing, vendor formats and the
// deliverer. This is the area's public face: the rest of the daemon imports only what it names (the
// `areas-through-their-face` rule).
export type { EndpointStore, Owner } from './endpoints.js';
export { workspacesWithEndpoints } from './fanout.js';
