// The public face of cluster/: what the rest of the daemon may import from this area (the
// `areas-through-their-face` rule). Everything else in the folder is the area's own business.
export type { Budget, Budgets, Rate } from './budgets.js';
export { liveNodes, type NodeRegistry, type NodeView } from './nodes.js';
