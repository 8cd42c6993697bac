// `postern smtp-credential …`: the SMTP credentials of a workspace (submission/smtp-credentials.ts),
// a user name and secret for AUTH on the submission ports that can do nothing but submit mail.
import type { Command } from './command.js';
import { optional, required, UsageError } from './command.js';

export const smtpCredentialCommands: Command[] = [
  {
    name: 'smtp-credential create',
    usage: '--workspace S [--env live|test] [--description D]',
    summary: 'create an SMTP credential (default env live); the user name and secret are printed, the secret this once',
    options: { workspace: { type: 'string' }, env: { type: 'string' }, description: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      const { credential, secret } = await app.smtpCredentials.create(ws, {
        env: optional(values, 'env') ?? 'live',
        description: optional(values, 'description'),
      });
      return { ...credential, secret };
    },
  },
  {
    name: 'smtp-credential list',
    usage: '--workspace S [--env live|test]',
    summary: "list a workspace's SMTP credentials, newest first (never their secrets)",
    options: { workspace: { type: 'string' }, env: { type: 'string' } },
    run: async (app, { values }) => {
      const env = optional(values, 'env');
      if (env !== undefined && env !== 'live' && env !== 'test') throw new UsageError('--env must be live or test');
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      return app.smtpCredentials.list(ws.id, env);
    },
  },
  {
    name: 'smtp-credential revoke',
    usage: 'ID',
    summary: 'revoke an SMTP credential; AUTH with it fails from then on',
    run: async (app, { positionals }) => {
      if (!positionals[0]) throw new UsageError('credential id (smc_…) is required');
      const credential = await app.smtpCredentials.revoke(positionals[0]);
      return { id: credential.id, username: credential.username, revoked: true, revokedAt: credential.revokedAt };
    },
  },
];
