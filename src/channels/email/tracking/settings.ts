// Whether open/click tracking is on for a workspace: a per-workspace setting (`email_settings`,
// `postern tracking enable|disable --workspace S`) over the `tracking.enabledByDefault` config.
// Tracking is opt-in because pixels and rewritten links are visible to recipients.
import type { Db } from '../../../db/database.js';
import { flag, isSet } from '../../../db/schema.js';
import type { Clock } from '../../../lib/clock.js';

export async function isTrackingEnabled(db: Db, workspaceId: string, byDefault: boolean): Promise<boolean> {
  const row = await db.selectFrom('email_settings').select('tracking').where('workspace_id', '=', workspaceId).executeTakeFirst();
  return row ? isSet(row.tracking) : byDefault;
}

export async function setTracking(db: Db, clock: Clock, workspaceId: string, enabled: boolean): Promise<void> {
  const now = clock.now().toISOString();
  await db
    .insertInto('email_settings')
    .values({ workspace_id: workspaceId, tracking: flag(enabled), updated_at: now })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ tracking: flag(enabled), updated_at: now }))
    .execute();
}
