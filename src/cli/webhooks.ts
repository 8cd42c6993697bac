// `postern webhook …`: the endpoint API for operators, acting as a workspace and environment.
import type { App } from '../app.js';
import type { ArgValues, Command } from './command.js';
import { optional, required, UsageError } from './command.js';
import { invalidRequest } from '../lib/errors.js';
import { parseBody } from '../lib/validation.js';
import type { Owner } from '../webhooks/index.js';
import { createEndpointSchema, listDeliveriesSchema, updateEndpointSchema } from '../contract/webhook-schemas.js';

const ownerOpts = { workspace: { type: 'string' }, env: { type: 'string' } } as const;

async function ownerOf(app: App, values: ArgValues): Promise<Owner> {
  const ws = await app.workspaces.bySlug(required(values, 'workspace'));
  const env = optional(values, 'env') ?? 'live';
  if (env !== 'live' && env !== 'test') throw new UsageError('--env must be live or test');
  return { workspaceId: ws.id, livemode: env === 'live' };
}

function idArg(positionals: string[], what = 'endpoint id'): string {
  if (!positionals[0]) throw new UsageError(`${what} is required`);
  return positionals[0];
}

const list = (v: string | undefined) =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
const bool = (v: string | undefined, name: string) => {
  if (v === undefined) return undefined;
  if (v === 'true' || v === 'false') return v === 'true';
  throw new UsageError(`--${name} must be true or false`);
};

export const webhookCommands: Command[] = [
  {
    name: 'webhook create',
    usage:
      '--workspace S [--env live|test] --url URL [--format postern|sendgrid|postmark|resend] [--events a,b|*] [--description D] [--enabled true|false]',
    summary: 'create a webhook endpoint; the signing secret is printed once',
    options: {
      ...ownerOpts,
      url: { type: 'string' },
      format: { type: 'string' },
      events: { type: 'string' },
      description: { type: 'string' },
      enabled: { type: 'string' },
    },
    run: async (app, { values }) => {
      const input = parseBody(createEndpointSchema, {
        url: required(values, 'url'),
        format: optional(values, 'format'),
        events: list(optional(values, 'events')),
        description: optional(values, 'description'),
        enabled: bool(optional(values, 'enabled'), 'enabled'),
      });
      const { endpoint, secret } = await app.webhooks.endpoints.create(await ownerOf(app, values), input);
      return { ...endpoint, secret };
    },
  },
  {
    name: 'webhook list',
    usage: '--workspace S [--env live|test]',
    summary: 'list webhook endpoints (never their secrets)',
    options: ownerOpts,
    run: async (app, { values }) => app.webhooks.endpoints.list(await ownerOf(app, values)),
  },
  {
    name: 'webhook get',
    usage: 'WHK_ID --workspace S [--env live|test]',
    summary: 'show one webhook endpoint',
    options: ownerOpts,
    run: async (app, { values, positionals }) => app.webhooks.endpoints.get(await ownerOf(app, values), idArg(positionals)),
  },
  {
    name: 'webhook update',
    usage: 'WHK_ID --workspace S [--env live|test] [--url URL] [--events a,b|*] [--description D] [--enabled true|false]',
    summary: 'change a webhook endpoint',
    options: {
      ...ownerOpts,
      url: { type: 'string' },
      events: { type: 'string' },
      description: { type: 'string' },
      enabled: { type: 'string' },
    },
    run: async (app, { values, positionals }) => {
      const input = parseBody(updateEndpointSchema, {
        url: optional(values, 'url'),
        events: list(optional(values, 'events')),
        description: optional(values, 'description'),
        enabled: bool(optional(values, 'enabled'), 'enabled'),
      });
      return app.webhooks.endpoints.update(await ownerOf(app, values), idArg(positionals), input);
    },
  },
  {
    name: 'webhook delete',
    usage: 'WHK_ID --workspace S [--env live|test]',
    summary: 'delete a webhook endpoint; its pending deliveries are abandoned',
    options: ownerOpts,
    run: async (app, { values, positionals }) => app.webhooks.endpoints.remove(await ownerOf(app, values), idArg(positionals)),
  },
  {
    name: 'webhook rotate-secret',
    usage: 'WHK_ID --workspace S [--env live|test]',
    summary: 'new signing secret (printed once); the old one keeps signing for 24 h',
    options: ownerOpts,
    run: async (app, { values, positionals }) => {
      const { endpoint, secret } = await app.webhooks.endpoints.rotateSecret(await ownerOf(app, values), idArg(positionals));
      return { ...endpoint, secret };
    },
  },
  {
    name: 'webhook deliveries',
    usage: 'WHK_ID --workspace S [--env live|test] [--status pending|succeeded|failed] [--limit N] [--before ISO]',
    summary: 'list deliveries of an endpoint with their attempts',
    options: { ...ownerOpts, status: { type: 'string' }, limit: { type: 'string' }, before: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      const query = listDeliveriesSchema.safeParse({
        status: optional(values, 'status'),
        limit: optional(values, 'limit'),
        before: optional(values, 'before'),
      });
      if (!query.success) throw invalidRequest(query.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      return app.webhooks.endpoints.deliveries(await ownerOf(app, values), idArg(positionals), query.data);
    },
  },
  {
    name: 'webhook retry',
    usage: 'WHK_ID DLV_ID --workspace S [--env live|test]',
    summary: 'make a delivery due again now (the running daemon sends it)',
    options: ownerOpts,
    run: async (app, { values, positionals }) => {
      if (!positionals[1]) throw new UsageError('delivery id is required');
      return app.webhooks.endpoints.retry(await ownerOf(app, values), idArg(positionals), positionals[1]);
    },
  },
];
