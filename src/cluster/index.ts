// Several nodes on one PostgreSQL: the node registry and health, the change feed, shared budgets and
// once-a-day jobs. This is the area's public face: the rest of the daemon imports only what it names
// (the `areas-through-their-face` rule).
export type { Budget, Budgets, Rate } from './budgets.js';
export { liveNodes, type NodeRegistry, type NodeView } from './nodes.js';
