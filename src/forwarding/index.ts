// The public face of forwarding/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export type { Forwarding } from './forwarding.js';
