// Whether open/click tracking is on for a workspace: a per-workspace setting (`email_settings`,
// `postern tracking enable|disable --workspace S`) over the `tracking.enabledByDefault` config.
// Tracking is opt-in because pixels and rewritten links are visible to recipients.
import { type Db, type Dialect, flag, isSet, readsTogether } from '../../../db/index.js';
import type { Clock } from '../../../lib/clock.js';

export async function isTrackingEnabled(db: Db, workspaceId: string, byDefault: boolean): Promise<boolean> {
  const row = await db.selectFrom('email_settings').select('tracking').where('workspace_id', '=', workspaceId).executeTakeFirst();
  return row ? isSet(row.tracking) : byDefault;
}

/**
 * Whether tracking is on for a workspace, read fresh for each message (`postern tracking enable`
 * followed at once by a send must track it). On PostgreSQL the reads asked in one turn of the
 * event loop share one statement (db/reads-together.ts); a read still starts after its call.
 */
export function trackingSettings(db: Db, dialect: Dialect, byDefault: boolean): (workspaceId: string) => Promise<boolean> {
  if (dialect !== 'postgres') return (workspaceId) => isTrackingEnabled(db, workspaceId, byDefault);
  const read = readsTogether<null, string, boolean>(
    async (_all, ids) => {
      const rows = await db.selectFrom('email_settings').select(['workspace_id', 'tracking']).where('workspace_id', 'in', ids).execute();
      return new Map(rows.map((r) => [r.workspace_id, isSet(r.tracking)]));
    },
    () => '',
  );
  return async (workspaceId) => (await read(null, workspaceId)) ?? byDefault;
}

export async function setTracking(db: Db, clock: Clock, workspaceId: string, enabled: boolean): Promise<void> {
  const now = clock.now().toISOString();
  await db
    .insertInto('email_settings')
    .values({ workspace_id: workspaceId, tracking: flag(enabled), updated_at: now })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ tracking: flag(enabled), updated_at: now }))
    .execute();
}
