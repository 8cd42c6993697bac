// The suppression lists, one per workspace and environment, with import and export. This is the
// area's public face: the rest of the daemon imports only what it names (the `areas-through-their-
// face` rule).
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
