// Reads asked in one turn of the event loop share one statement on PostgreSQL
// (db/reads-together.ts): the dispatcher's suppression checks and the tracking settings read when
// composing. Their oracle is the plain read each replaces. Over generated suppression lists
// (workspaces, environments, reasons, addresses in any case) and messages (recipient, channel,
// template or raw), the checks asked all at once answer what each asked alone answers; over
// generated settings, so do the tracking reads.
import fc from 'fast-check';
import t from 'tap';
import { isTrackingEnabled, trackingSettings } from '../../src/channels/email/tracking/settings.js';
import { readsTogether } from '../../src/db/reads-together.js';
import { createSuppressionStore } from '../../src/suppressions/store.js';
import { createSuppressionCheck } from '../../src/outbound/suppression-hooks.js';
import { testDatabases } from '../helpers/databases.js';
import { openMigrated } from '../helpers/migrated-database.js';
import { holds } from '../helpers/property.js';
import { SUPPRESSION_REASONS } from '../../src/contract/vocabulary.js';

const AT = '2026-11-28T00:00:00.000Z';
const WORKSPACES = ['ws_a', 'ws_b', 'ws_c'];
const ADDRESSES = ['ann@example.com', 'Bob@Example.com', 'carl@example.org', '+15550100', 'token-1'];

t.test('the coalescer answers each key as its loader would, and shares one load per group and turn', async (t) => {
  const loads: string[][] = [];
  const data = new Map([
    ['g1:a', 1],
    ['g2:a', 2],
    ['g1:b', 3],
  ]);
  const read = readsTogether<string, string, number>(
    async (group, keys) => {
      loads.push([group, ...keys]);
      return new Map(keys.filter((k) => data.has(`${group}:${k}`)).map((k) => [k, data.get(`${group}:${k}`)!]));
    },
    (g) => g,
  );
  const answers = await Promise.all([read('g1', 'a'), read('g2', 'a'), read('g1', 'b'), read('g1', 'a'), read('g1', 'z')]);
  t.same(answers, [1, 2, 3, 1, undefined]);
  t.same(loads, [
    ['g1', 'a', 'b', 'z'],
    ['g2', 'a'],
  ]);
  const failing = readsTogether<string, string, number>(
    () => Promise.reject(new Error('down')),
    (g) => g,
  );
  await t.rejects(Promise.all([failing('g', 'a'), failing('g', 'b')]), /down/, 'a failed load fails every read it carried');
});

for (const dbName of testDatabases()) {
  t.test(`suppression checks and tracking settings read together equal each read alone (${dbName})`, async (t) => {
    const handle = await openMigrated(t, dbName);
    const { db, dialect } = handle;
    let n = 0;
    const deps = { db, clock: { now: () => new Date(AT) }, ids: { uuid: () => `u${++n}`, publicId: (p: string) => `${p}_${++n}` } };
    for (const id of WORKSPACES)
      await db.insertInto('workspaces').values({ id, slug: id, name: id, plan: 'free', created_at: AT }).execute();
    const store = createSuppressionStore(deps);
    const alone = createSuppressionCheck(store);
    const together = createSuppressionCheck(store, { together: true });

    await holds(
      t,
      'generated lists and messages: every check asked at once answers as asked alone',
      fc.asyncProperty(
        fc.array(
          fc.record({
            workspace: fc.constantFrom(...WORKSPACES),
            livemode: fc.boolean(),
            address: fc.constantFrom(...ADDRESSES),
            reason: fc.constantFrom(...SUPPRESSION_REASONS),
          }),
          { maxLength: 8 },
        ),
        fc.array(
          fc.record({
            workspaceId: fc.constantFrom(...WORKSPACES),
            livemode: fc.boolean(),
            channel: fc.constantFrom('email', 'sms', 'push'),
            recipient: fc.constantFrom(...ADDRESSES, ...ADDRESSES.map((a) => a.toUpperCase()), ' ann@example.com '),
            templateSlug: fc.constantFrom(null, 'welcome'),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (entries, messages) => {
          await db.deleteFrom('suppressions').execute();
          for (const e of entries)
            await store.add({ workspaceId: e.workspace, livemode: e.livemode }, { address: e.address, reason: e.reason });
          const expected = [];
          for (const m of messages) expected.push(await alone(m));
          const got = await Promise.all(messages.map((m) => together(m)));
          if (JSON.stringify(got) !== JSON.stringify(expected))
            throw new Error(`together ${JSON.stringify(got)}, alone ${JSON.stringify(expected)}`);
        },
      ),
      100,
    );

    await holds(
      t,
      'generated settings: every tracking read asked at once answers as asked alone',
      fc.asyncProperty(
        fc.array(fc.record({ workspace: fc.constantFrom(...WORKSPACES), tracking: fc.boolean() }), { maxLength: 3 }),
        fc.boolean(),
        fc.array(fc.constantFrom(...WORKSPACES, 'ws_none'), { minLength: 1, maxLength: 8 }),
        async (settings, byDefault, asked) => {
          await db.deleteFrom('email_settings').execute();
          const seen = new Set<string>();
          for (const s of settings) {
            if (seen.has(s.workspace)) continue;
            seen.add(s.workspace);
            await db
              .insertInto('email_settings')
              .values({ workspace_id: s.workspace, tracking: s.tracking ? 1 : 0, updated_at: AT })
              .execute();
          }
          const read = trackingSettings(db, 'postgres', byDefault);
          const expected = [];
          for (const w of asked) expected.push(await isTrackingEnabled(db, w, byDefault));
          const got = await Promise.all(asked.map((w) => read(w)));
          if (JSON.stringify(got) !== JSON.stringify(expected))
            throw new Error(`together ${JSON.stringify(got)}, alone ${JSON.stringify(expected)}`);
        },
      ),
      100,
    );
    t.comment(`${dialect}: the daemon reads together on PostgreSQL only; the property holds on both`);
  });
}
