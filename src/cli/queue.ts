// `postern queue suspend|resume|reset-backoff|purge|destinations`: the operator's levers on email destinations
// (docs/cli.md, docs/email-delivery.md "Destinations"). Without --workspace they act for every
// workspace: a suspension holds the domain box-wide (what a blocklisting calls for), a purge drops
// every workspace's waiting mail for it. A running daemon sees a hold within two seconds; mail a
// resume releases is due at once (the dispatcher finds it within its interval).
import { isDomainName, normalizeDomain } from '../domains/index.js';
import { purgeDestination, releaseDeferredTo } from '../outbound/index.js';
import type { App } from '../app.js';
import type { Command } from './command.js';
import { optional, UsageError } from './command.js';

function domainArg(positionals: string[], values: Record<string, unknown>): string {
  const raw = (typeof values.domain === 'string' ? values.domain : undefined) ?? positionals[0];
  if (!raw) throw new UsageError('a domain is required');
  const d = normalizeDomain(raw);
  if (!isDomainName(d)) throw new UsageError(`${raw} is not a domain name`);
  return d;
}

async function workspaceOf(app: App, values: Record<string, unknown>): Promise<{ id: string; slug: string } | null> {
  const slug = optional(values as never, 'workspace');
  return slug ? app.workspaces.bySlug(slug) : null;
}

export const queueCommands: Command[] = [
  {
    name: 'queue suspend',
    usage: 'DOMAIN [--workspace S] [--reason TEXT]',
    summary: 'hold email to a domain (every workspace unless --workspace): deferred without a connection until resumed',
    options: { workspace: { type: 'string' }, reason: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      const domain = domainArg(positionals, values);
      const ws = await workspaceOf(app, values);
      const reason = optional(values, 'reason') ?? (ws ? 'suspended by the operator' : 'suspended by the operator for every workspace');
      await app.destinations.suspend(ws?.id ?? '', domain, reason);
      return { domain, workspace: ws?.slug ?? null, suspended: true, reason };
    },
  },
  {
    name: 'queue resume',
    usage: 'DOMAIN [--workspace S]',
    summary: 'lift a hold; the mail it deferred is due at once',
    options: { workspace: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      const domain = domainArg(positionals, values);
      const ws = await workspaceOf(app, values);
      const lifted = await app.destinations.resume(ws?.id ?? '', domain);
      const released = await releaseDeferredTo(app.db, domain, ws?.id ?? null, app.clock.now().toISOString());
      return { domain, workspace: ws?.slug ?? null, lifted, released };
    },
  },
  {
    name: 'queue reset-backoff',
    usage: 'DOMAIN',
    summary:
      "end a destination's back-off now: its pause and its lowered rate and connections, on every node; the mail it deferred is due at once",
    options: {},
    run: async (app, { values, positionals }) => {
      const domain = domainArg(positionals, values);
      const reset = await app.destinations.resetBackoff(domain);
      // The back-off is the box's, not a workspace's: every workspace's waiting mail goes, as after `resume`.
      const released = await releaseDeferredTo(app.db, domain, null, app.clock.now().toISOString());
      return { domain, reset, released };
    },
  },
  {
    name: 'queue purge',
    usage: '--domain D [--workspace S] [--status queued|deferred]',
    summary: 'drop the email still waiting for a domain: queued is canceled, deferred fails',
    options: { domain: { type: 'string' }, workspace: { type: 'string' }, status: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      const domain = domainArg(positionals, values);
      const status = optional(values, 'status');
      if (status !== undefined && status !== 'queued' && status !== 'deferred') throw new UsageError('--status must be queued or deferred');
      const ws = await workspaceOf(app, values);
      const result = await purgeDestination(app.db, app.ledger, {
        domain,
        workspaceId: ws?.id ?? null,
        statuses: status ? [status] : ['queued', 'deferred'],
        now: app.clock.now().toISOString(),
        why: `the queue for ${domain} was purged by the operator`,
      });
      return { domain, workspace: ws?.slug ?? null, ...result };
    },
  },
  {
    name: 'queue destinations',
    usage: '--workspace S [--limit N]',
    summary: "a workspace's destination domains: delivered, deferred, bounced, last error, hold and back-off",
    options: { workspace: { type: 'string' }, limit: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await workspaceOf(app, values);
      if (!ws) throw new UsageError('--workspace is required');
      return app.destinations.list(ws.id, { limit: Number(optional(values, 'limit') ?? 200) });
    },
  },
];
