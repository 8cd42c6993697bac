import type { Command } from './command.js';
import { optional, required, UsageError } from './command.js';

export const workspaceCommands: Command[] = [
  {
    name: 'workspace create',
    usage: '--slug S --name N [--plan free|starter|pro|custom]',
    summary: 'create a workspace',
    options: { slug: { type: 'string' }, name: { type: 'string' }, plan: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.create({
        slug: required(values, 'slug'),
        name: required(values, 'name'),
        plan: optional(values, 'plan'),
      });
      return { id: ws.id, slug: ws.slug, name: ws.name, plan: ws.plan };
    },
  },
  {
    name: 'workspace list',
    usage: '',
    summary: 'list workspaces',
    run: async (app) =>
      (await app.workspaces.list()).map((w) => ({ id: w.id, slug: w.slug, name: w.name, plan: w.plan, createdAt: w.createdAt })),
  },
  {
    name: 'key create',
    usage: '--workspace S --env live|test [--scopes read,send,cancel,inbound,webhooks,cluster] [--name N]',
    summary: 'create an API key; the secret is printed once',
    options: { workspace: { type: 'string' }, env: { type: 'string' }, scopes: { type: 'string' }, name: { type: 'string' } },
    run: async (app, { values }) => {
      const scopes = optional(values, 'scopes');
      // An empty list is a mistake (a variable that expanded to nothing), not a request for a key
      // that may do everything: that is what leaving --scopes out means.
      if (scopes !== undefined && scopes.split(',').every((s) => s.trim() === '')) {
        throw new UsageError('--scopes names no scope: list some (read,send,cancel,inbound,webhooks), or leave it out for an unscoped key');
      }
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      // Whoever runs the CLI holds the box (its database and secrets): a box owner, who may grant
      // the cluster scope.
      const { key, secret } = await app.keys.create(
        ws,
        { env: required(values, 'env'), scopes, name: optional(values, 'name') },
        { boxOwner: true },
      );
      return { id: key.id, secret, env: key.env, scopes: key.scopes, name: key.name };
    },
  },
  {
    name: 'key list',
    usage: '--workspace S',
    summary: "list a workspace's keys (never their secrets)",
    options: { workspace: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      return (await app.keys.list(ws.id)).map((k) => ({
        id: k.id,
        name: k.name,
        env: k.env,
        prefix: k.prefix,
        scopes: k.scopes,
        createdAt: k.createdAt,
        revokedAt: k.revokedAt,
        lastUsedAt: k.lastUsedAt,
      }));
    },
  },
  {
    name: 'key revoke',
    usage: 'ID',
    summary: 'revoke a key; requests with it get 401 from then on',
    run: async (app, { positionals }) => {
      if (!positionals[0]) throw new UsageError('key id is required');
      const key = await app.keys.revoke(positionals[0]);
      return { id: key.id, revoked: true };
    },
  },
];
