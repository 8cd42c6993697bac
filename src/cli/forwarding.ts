// `postern forwarding arc-record`: the DNS record receivers need to validate Postern's ARC seals.
import type { Command } from './command.js';

export const forwardingCommands: Command[] = [
  {
    name: 'forwarding arc-record',
    usage: '',
    summary: 'print the TXT record to publish for the ARC seal of forwarded mail',
    run: async (app) => app.forwarding.arcRecord(),
  },
];
