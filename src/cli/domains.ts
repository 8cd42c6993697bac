import type { Command } from './command.js';
import { required, UsageError } from './command.js';
import { MTA_STS_MODES } from '../domains/index.js';
import type { MtaStsMode } from '../contract/domains.js';

export const domainCommands: Command[] = [
  {
    name: 'domain list',
    usage: '--workspace S',
    summary: "list a workspace's inbound/sending domains (shared first)",
    options: { workspace: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      return app.domains.list(ws.id);
    },
  },
  {
    name: 'domain add',
    usage: '--workspace S --domain D [--acknowledge-existing-mx]',
    summary: 'claim a custom domain; prints the DNS records to publish',
    options: { workspace: { type: 'string' }, domain: { type: 'string' }, 'acknowledge-existing-mx': { type: 'boolean' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      return app.domains.claim(ws.id, {
        domain: required(values, 'domain'),
        acknowledgeExistingMx: values['acknowledge-existing-mx'] === true,
      });
    },
  },
  {
    name: 'domain verify',
    usage: 'ID --workspace S',
    summary: 'check the published DNS records now; a verified domain receives and signs mail',
    options: { workspace: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      if (!positionals[0]) throw new UsageError('domain id is required');
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      return app.domains.get(ws.id, positionals[0]);
    },
  },
  {
    name: 'domain mta-sts',
    usage: '--domain D --mode testing|enforce|none',
    summary: 'set the mode of the MTA-STS policy Postern serves for a custom domain; prints the policy and its new TXT id',
    options: { domain: { type: 'string' }, mode: { type: 'string' } },
    run: async (app, { values }) => {
      const mode = required(values, 'mode');
      if (!MTA_STS_MODES.includes(mode as MtaStsMode)) throw new UsageError(`--mode must be one of ${MTA_STS_MODES.join(', ')}`);
      return app.mtaSts.setMode(required(values, 'domain'), mode);
    },
  },
  {
    name: 'domain rotate-dkim',
    usage: 'ID --workspace S [--ed25519 | --no-ed25519 | --cancel]',
    summary: 'start a DKIM key rotation now (--cancel: abandon one waiting for its records); prints the domain with its keys (dkim.keys)',
    options: {
      workspace: { type: 'string' },
      ed25519: { type: 'boolean' },
      'no-ed25519': { type: 'boolean' },
      cancel: { type: 'boolean' },
    },
    run: async (app, { values, positionals }) => {
      if (!positionals[0]) throw new UsageError('domain id is required');
      if (values.cancel === true) {
        const ws = await app.workspaces.bySlug(required(values, 'workspace'));
        return app.domains.cancelDkimRotation(ws.id, positionals[0]);
      }
      if (values.ed25519 === true && values['no-ed25519'] === true) throw new UsageError('--ed25519 and --no-ed25519 exclude each other');
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      const ed25519 = values.ed25519 === true ? true : values['no-ed25519'] === true ? false : undefined;
      return app.domains.rotateDkim(ws.id, positionals[0], { ed25519 });
    },
  },
  {
    name: 'domain delete',
    usage: 'ID --workspace S',
    summary: 'soft-delete a custom domain and its addresses',
    options: { workspace: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      if (!positionals[0]) throw new UsageError('domain id is required');
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      await app.domains.remove(ws.id, positionals[0]);
      return { id: positionals[0], deleted: true };
    },
  },
];
