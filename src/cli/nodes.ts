// `postern nodes`: the nodes of the cluster sharing this database (docs/cluster.md).
import type { Command } from './command.js';

export const nodeCommands: Command[] = [
  {
    name: 'nodes',
    usage: '',
    summary: 'list the nodes sharing this database: host, version, started, last heartbeat, health, in flight, claimed',
    run: async (app) => (await app.nodes.list()).map(({ self: _self, ...node }) => node),
  },
];
