// `postern suppression list|add|remove` and `postern tracking enable|disable|status`.
import type { Command } from './command.js';
import { optional, required, UsageError, type ArgValues } from './command.js';
import { isTrackingEnabled, setTracking } from '../channels/email/index.js';
import type { ListScope } from '../suppressions/index.js';
import type { App } from '../app.js';
import { SUPPRESSION_REASONS, type SuppressionReason } from '../contract/vocabulary.js';

/** The list a command acts on: the workspace's live list, or its test list with --test. */
async function listOf(app: App, values: ArgValues): Promise<ListScope> {
  const ws = await app.workspaces.bySlug(required(values, 'workspace'));
  return { workspaceId: ws.id, livemode: values.test !== true };
}

export const suppressionCommands: Command[] = [
  {
    name: 'suppression list',
    usage: '--workspace S [--test] [--limit N]',
    summary: "list a workspace's suppressed addresses, newest first (--test: the test environment's list)",
    options: { workspace: { type: 'string' }, test: { type: 'boolean' }, limit: { type: 'string' } },
    run: async (app, { values }) => {
      return app.suppressions.list(await listOf(app, values), { limit: Number(optional(values, 'limit') ?? 200) });
    },
  },
  {
    name: 'suppression add',
    usage: '--workspace S [--test] ADDRESS [--reason manual|bounce|complaint|unsubscribe] [--detail TEXT]',
    summary: 'suppress an address (for live sends; --test: for test sends)',
    options: { workspace: { type: 'string' }, test: { type: 'boolean' }, reason: { type: 'string' }, detail: { type: 'string' } },
    run: async (app, { values, positionals }) => {
      const list = await listOf(app, values);
      if (!positionals[0] || !positionals[0].includes('@')) throw new UsageError('an address is required');
      const reason = (optional(values, 'reason') ?? 'manual') as SuppressionReason;
      if (!SUPPRESSION_REASONS.includes(reason)) throw new UsageError(`reason must be one of ${SUPPRESSION_REASONS.join(', ')}`);
      return app.suppressions.add(list, { address: positionals[0], reason, detail: optional(values, 'detail') });
    },
  },
  {
    name: 'suppression remove',
    usage: '--workspace S [--test] ADDRESS',
    summary: 'remove an address from the suppression list (--test: from the test list)',
    options: { workspace: { type: 'string' }, test: { type: 'boolean' } },
    run: async (app, { values, positionals }) => {
      const list = await listOf(app, values);
      if (!positionals[0]) throw new UsageError('an address is required');
      return { address: positionals[0].toLowerCase(), deleted: await app.suppressions.remove(list, positionals[0]) };
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
