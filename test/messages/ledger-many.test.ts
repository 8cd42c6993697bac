// Changes committed together are written, on PostgreSQL, with one UPDATE per shape and one INSERT
// of their events (messages/ledger-many.ts). Its oracle is the plain path: the same changes
// committed one after the other, each in its own transaction. Over generated messages (status,
// lease, an open already recorded) and changes (a step of the transition table or none, columns,
// the lease they expect, a first open, a row that moved on after it was read), both paths must
// give the same answers, leave the same rows and record the same events in the same order.
import fc from 'fast-check';
import t from 'tap';
import { createWriteBatcher } from '../../src/db/group-commit.js';
import type { MessagesTable } from '../../src/db/schema.js';
import { createEventBus } from '../../src/events/bus.js';
import { createLogger } from '../../src/lib/logger.js';
import { createLedger, type Change } from '../../src/messages/ledger.js';
import type { MessageRow } from '../../src/messages/message.js';
import { TRANSITIONS } from '../../src/messages/transitions.js';
import { testDatabases } from '../helpers/databases.js';
import { countingStatements, openMigrated } from '../helpers/migrated-database.js';
import { endpointRow } from '../helpers/webhooks.js';
import { holds } from '../helpers/property.js';
import type { MessageStatus } from '../../src/contract/messages.js';

const AT = '2026-11-28T00:00:00.000Z';
const STATUSES: MessageStatus[] = ['queued', 'scheduled', 'rendered', 'dispatched', 'sent', 'delivered'];
const LEASES = ['node.1', 'node.2'];

const messageArb = fc.record({
  status: fc.constantFrom(...STATUSES),
  lockedBy: fc.constantFrom(null, ...LEASES),
  opened: fc.boolean(),
  workspace: fc.constantFrom('ws_a', 'ws_b'),
});
const changeArb = fc.record({
  // Which of the table's moves out of the message's status (modulo their number); none when -1.
  step: fc.integer({ min: -1, max: 7 }),
  lease: fc.constantFrom(undefined, ...LEASES),
  patch: fc.record(
    {
      error: fc.constantFrom(null, 'deferred: 451 later', 'it\'s "quoted" \\ and ünicode'),
      provider: fc.constantFrom(null, 'mx'),
      attempts: fc.integer({ min: 0, max: 9 }),
      latency_ms: fc.integer({ min: 0, max: 5000 }),
      due_at: fc.constantFrom(null, '2026-11-28T00:05:00.000Z'),
      locked_until: fc.constantFrom(null, '2026-11-28T00:01:00.000Z'),
      locked_by: fc.constant(null),
    },
    { requiredKeys: [] },
  ),
  note: fc.option(fc.constantFrom('deferred', 'bounced: 550 no such user'), { nil: undefined }),
  open: fc.boolean(),
  movedOn: fc.boolean(),
});

type Message = typeof messageArb extends fc.Arbitrary<infer M> ? M : never;
type ChangeSpec = typeof changeArb extends fc.Arbitrary<infer C> ? C : never;

function messageRow(id: string, m: Message): Omit<MessagesTable, 'seq'> {
  return {
    id,
    public_id: `msg_${id}`,
    workspace_id: m.workspace,
    livemode: 1,
    channel: 'email',
    status: m.status,
    recipient: 'ann@example.com',
    template_slug: null,
    template_version: null,
    pinned_version: null,
    interpolate: 0,
    vars: '{}',
    metadata: '{}',
    metadata_text: '{}',
    search_text: id,
    from_override: null,
    from_name_override: null,
    cc: '[]',
    bcc: '[]',
    reply_to: null,
    provider: null,
    provider_connection_id: null,
    provider_message_id: null,
    latency_ms: null,
    opened_at: m.opened ? AT : null,
    clicked_at: null,
    error: null,
    timeline: JSON.stringify([{ t: AT, e: 'accepted' }]),
    created_at: AT,
    scheduled_at: null,
    idempotency_key: null,
    attempts: 0,
    due_at: AT,
    locked_until: m.lockedBy ? '2026-11-28T00:01:00.000Z' : null,
    locked_by: m.lockedBy,
    updated_at: AT,
  };
}

for (const dbName of testDatabases()) {
  t.test(`changes committed together equal the same changes committed one by one (${dbName})`, async (t) => {
    const { db, dialect } = await openMigrated(t, dbName);
    // Counts the multi-row statements, so the property is known to have reached them.
    const { db: counted, count: many } = countingStatements(db, 'json_to_recordset');
    for (const id of ['ws_a', 'ws_b'])
      await db.insertInto('workspaces').values({ id, slug: id, name: id, plan: 'free', created_at: AT }).execute();
    // ws_a listens (its events are recorded to be fanned out), ws_b has no endpoint.
    await db
      .insertInto('webhook_endpoints')
      .values(endpointRow({ id: 'ep_a', workspace_id: 'ws_a' }))
      .execute();
    let n = 0;
    const ledger = createLedger({
      db: counted,
      dialect,
      writes: createWriteBatcher(counted, dialect),
      clock: { now: () => new Date(AT) },
      ids: { uuid: () => `u${++n}`, publicId: (prefix: string) => `${prefix}_${String(++n).padStart(8, '0')}` },
      bus: createEventBus(),
      log: createLogger('silent'),
    });
    let run = 0;

    // Reads the messages of `ids`, builds each one's change, moves on the rows that should have.
    async function changes(ids: string[], specs: ChangeSpec[]): Promise<Change[]> {
      const out: Change[] = [];
      for (const [i, id] of ids.entries()) {
        const row = await db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        const spec = specs[i];
        const c = ledger.change(row);
        const moves = TRANSITIONS.filter((tr) => tr.from === row.status);
        if (spec.step >= 0 && moves.length > 0) {
          const tr = moves[spec.step % moves.length];
          c.step(tr.to, tr.trigger);
        }
        if (spec.note) c.note(spec.note);
        c.set(spec.patch);
        if (spec.open) {
          c.set({ opened_at: AT });
          c.unsetColumn = 'opened_at';
          c.event('message.opened', { userAgent: 'test' });
        }
        if (spec.movedOn) await db.updateTable('messages').set({ status: 'canceled' }).where('id', '=', id).execute();
        out.push(c);
      }
      return out;
    }

    async function outcome(ids: string[]) {
      const rows = await db.selectFrom('messages').selectAll().where('id', 'in', ids).execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      const shown = ids.map((id, i) => {
        const { seq: _s, id: _i, public_id: _p, search_text: _t, ...rest } = byId.get(id)!;
        return { i, ...rest };
      });
      const events = await db
        .selectFrom('events')
        .select(['workspace_id', 'livemode', 'type', 'data', 'fanned_out', 'forward_checked', 'endpoint_id'])
        .orderBy('seq')
        .execute();
      const index = new Map(ids.map((id, i) => [`msg_${id}`, i]));
      return {
        shown,
        events: events
          .map((e) => ({ ...e, data: JSON.parse(e.data) as { id: string } }))
          .filter((e) => index.has(e.data.id))
          .map((e) => ({ ...e, data: { ...e.data, id: index.get(e.data.id) } })),
      };
    }

    await holds(
      t,
      'generated messages and changes: the same answers, rows and events as one by one',
      fc.asyncProperty(fc.array(fc.tuple(messageArb, changeArb), { minLength: 1, maxLength: 12 }), async (cases) => {
        run++;
        const together = cases.map((_, i) => `t${run}_${i}`);
        const alone = cases.map((_, i) => `a${run}_${i}`);
        await db
          .insertInto('messages')
          .values([...together, ...alone].map((id, k) => messageRow(id, cases[k % cases.length][0])))
          .execute();
        const specs = cases.map(([, c]) => c);
        const leaseOf = (i: number) => (specs[i].lease === undefined ? {} : { lease: specs[i].lease });

        const changesT = await changes(together, specs);
        const answersT = await Promise.all(changesT.map((c, i) => ledger.commit(c, leaseOf(i))));
        const changesA = await changes(alone, specs);
        const answersA = [];
        for (const [i, c] of changesA.entries()) answersA.push(await ledger.commit(c, leaseOf(i)));

        const strip = (r: MessageRow | null) => r && { ...r, id: null, public_id: null, search_text: null, seq: null };
        const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
        const [outT, outA] = [await outcome(together), await outcome(alone)];
        if (!same(answersT.map(strip), answersA.map(strip))) throw new Error(`answers differ: ${JSON.stringify([answersT, answersA])}`);
        if (!same(outT.shown, outA.shown)) throw new Error(`rows differ: ${JSON.stringify([outT.shown, outA.shown])}`);
        if (!same(outT.events, outA.events)) throw new Error(`events differ: ${JSON.stringify([outT.events, outA.events])}`);
      }),
      100,
    );
    if (dialect === 'postgres') t.ok(many() > 0, `the multi-row statements were reached (${many()} times)`);
    else t.equal(many(), 0, 'SQLite writes each change alone');
  });
}
