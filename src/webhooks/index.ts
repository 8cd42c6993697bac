// The public face of webhooks/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export type { EndpointStore, Owner } from './endpoints.js';
export { workspacesWithEndpoints } from './fanout.js';
