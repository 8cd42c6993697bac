// `postern suppression list|add|remove` and `postern tracking enable|disable|status`.
import type { Command } from './command.js';
import { optional, required, UsageError } from './command.js';
import { isTrackingEnabled, setTracking } from '../channels/email/tracking/settings.js';
import { SUPPRESSION_REASONS, type SuppressionReason } from '../suppressions/store.js';

export const suppressionCommands: Command[] = [
  {
    name: 'suppression list',
    usage: '--workspace S [--limit N]',
    summary: "list a workspace's suppressed addresses, newest first",
    options: { workspace: { type: 'string' }, limit: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      return app.suppressions.list(ws.id, { limit: Number(optional(values, 'limit') ?? 200) });
    },
  },
  {
    name: 'suppression add',
    usage: '--workspace S ADDRESS [--reason manual|bounce|complaint|unsubscribe] [--detail TEXT]',
    summary: 'suppress an address',
    options: { workspace: { type: 'string' }, reason: { type: 'string' }, detail: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      if (!positionals[0] || !positionals[0].includes('@')) throw new UsageError('an address is required');
      const reason = (optional(values, 'reason') ?? 'manual') as SuppressionReason;
      if (!SUPPRESSION_REASONS.includes(reason)) throw new UsageError(`reason must be one of ${SUPPRESSION_REASONS.join(', ')}`);
      return app.suppressions.add(ws.id, { address: positionals[0], reason, detail: optional(values, 'detail') });
    },
  },
  {
    name: 'suppression remove',
    usage: '--workspace S ADDRESS',
    summary: 'remove an address from the suppression list',
    options: { workspace: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      if (!positionals[0]) throw new UsageError('an address is required');
      return { address: positionals[0].toLowerCase(), deleted: await app.suppressions.remove(ws.id, positionals[0]) };
    },
  },
  {
    name: 'tracking enable',
    usage: '--workspace S',
    summary: 'turn on open and click tracking for a workspace',
    options: { workspace: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      await setTracking(app.db, app.clock, ws.id, true);
      return { workspace: ws.slug, tracking: true };
    },
  },
  {
    name: 'tracking disable',
    usage: '--workspace S',
    summary: 'turn off open and click tracking for a workspace',
    options: { workspace: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      await setTracking(app.db, app.clock, ws.id, false);
      return { workspace: ws.slug, tracking: false };
    },
  },
  {
    name: 'tracking status',
    usage: '--workspace S',
    summary: 'whether open and click tracking is on for a workspace',
    options: { workspace: { type: 'string' } },
    run: async (app, { values }) => {
      const ws = await app.workspaces.bySlug(required(values, 'workspace'));
      return { workspace: ws.slug, tracking: await isTrackingEnabled(app.db, ws.id, app.config.tracking.enabledByDefault) };
    },
  },
];
