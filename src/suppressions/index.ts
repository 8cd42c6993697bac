// The public face of suppressions/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export {
  decodePosition,
  encodePosition,
  type ListScope,
  normalizeAddress,
  positionOf,
  type Suppression,
  type SuppressionStore,
} from './store.js';
export { exportSuppressions, ImportRefused, importSuppressions, type TransferFormat } from './transfer.js';
