// recordEvent marks an event fanned out at its insert when its workspace has no enabled endpoint
// (events/record.ts). Its oracle is the plain path: every event recorded unfanned, then fanned out
// by the webhook worker (webhooks/fanout.ts). Over generated endpoints (workspace, environment,
// enabled, deleted, subscriptions) and events, both must leave the same delivery rows.
import fc from 'fast-check';
import t from 'tap';
import { flag } from '../../src/db/schema.js';
import { eventRow, recordEvent, type NewEvent } from '../../src/events/record.js';
import { fanOut } from '../../src/webhooks/fanout.js';
import { testDatabases } from '../helpers/databases.js';
import { openMigrated } from '../helpers/migrated-database.js';
import { holds } from '../helpers/property.js';
import type { EventType } from '../../src/contract/webhooks.js';

const WORKSPACES = ['ws_a', 'ws_b', 'ws_c'];
const TYPES: EventType[] = ['message.delivered', 'message.failed', 'message.opened'];
const AT = '2026-11-28T00:00:00.000Z';

const endpointArb = fc.record({
  workspace: fc.integer({ min: 0, max: 2 }),
  livemode: fc.boolean(),
  enabled: fc.boolean(),
  deleted: fc.boolean(),
  events: fc.oneof(fc.constant(['*']), fc.subarray(TYPES)),
});
const eventArb = fc.record({
  workspace: fc.integer({ min: 0, max: 2 }),
  livemode: fc.boolean(),
  type: fc.constantFrom(...TYPES),
  bound: fc.boolean(),
});

for (const dbName of testDatabases()) {
  t.test(`events recorded fanned out give the plain path's deliveries on ${dbName}`, async (t) => {
    const { db, dialect } = await openMigrated(t, dbName);
    for (const id of WORKSPACES)
      await db.insertInto('workspaces').values({ id, slug: id, name: id, plan: 'free', created_at: AT }).execute();
    let n = 0;
    const deps = {
      clock: { now: () => new Date(AT) },
      ids: { uuid: () => `u${++n}`, publicId: (prefix: string) => `${prefix}_${++n}` },
    };
    let reached = 0;

    // Records `events` one way, fans out until nothing is left, returns the deliveries.
    async function deliveries(events: NewEvent[], fast: boolean): Promise<string[]> {
      await db.deleteFrom('webhook_deliveries').execute();
      await db.deleteFrom('events').execute();
      await db.transaction().execute(async (trx) => {
        for (const [i, e] of events.entries()) {
          const ids = { uuid: () => `evt_${i}`, publicId: () => `evt_${i}` };
          if (fast) await recordEvent(trx, { ...deps, ids }, e);
          else
            await trx
              .insertInto('events')
              .values(eventRow({ ...deps, ids }, e))
              .execute();
        }
      });
      if (fast) {
        const early = await db.selectFrom('events').select('id').where('fanned_out', '=', flag(true)).execute();
        if (early.length > 0) reached++;
      }
      while ((await fanOut(db, { ...deps, dialect })) > 0);
      const rows = await db.selectFrom('webhook_deliveries').select(['event_id', 'endpoint_id', 'event_type']).execute();
      return rows.map((r) => `${r.event_id}>${r.endpoint_id}:${r.event_type}`).sort();
    }

    await holds(
      t,
      'generated endpoints and events: the same delivery rows as recording every event unfanned',
      fc.asyncProperty(
        fc.array(endpointArb, { maxLength: 5 }),
        fc.array(eventArb, { minLength: 1, maxLength: 8 }),
        async (endpoints, evs) => {
          await db.deleteFrom('webhook_deliveries').execute();
          await db.deleteFrom('webhook_endpoints').execute();
          const ids: string[] = [];
          for (const [i, ep] of endpoints.entries()) {
            ids.push(`ep${i}`);
            await db
              .insertInto('webhook_endpoints')
              .values({
                id: `ep${i}`,
                public_id: `whk_${i}`,
                workspace_id: WORKSPACES[ep.workspace],
                livemode: flag(ep.livemode),
                url: 'https://example.com/hook',
                description: '',
                events: JSON.stringify(ep.events),
                enabled: flag(ep.enabled),
                secret: 'whsec_x',
                previous_secret: null,
                previous_secret_expires_at: null,
                failing_since: null,
                disabled_reason: null,
                created_at: AT,
                updated_at: AT,
                deleted_at: ep.deleted ? AT : null,
              })
              .execute();
          }
          const events: NewEvent[] = evs.map((e, i) => ({
            workspaceId: WORKSPACES[e.workspace],
            livemode: e.livemode,
            type: e.type,
            data: { i },
            // An event bound to an endpoint (message.received on a bound address) is never marked early.
            endpointId: e.bound && ids.length > 0 ? ids[i % ids.length] : null,
          }));
          const plain = await deliveries(events, false);
          const fast = await deliveries(events, true);
          if (JSON.stringify(plain) !== JSON.stringify(fast)) {
            throw new Error(`plain ${JSON.stringify(plain)} but recorded ${JSON.stringify(fast)}`);
          }
        },
      ),
      150,
    );
    t.ok(reached > 0, `some cases recorded an event fanned out at its insert (${reached})`);
  });
}
