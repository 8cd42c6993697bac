// Sends that commit together are written, on PostgreSQL, with their idempotency keys first, one
// usage count per workspace and one INSERT of their messages (outbound/accept.ts,
// messages/ledger-many.ts). Its oracle is the plain path: the same sends accepted one after the
// other. Over generated sends (two workspaces, one with a quota of a few messages, live and test,
// repeated idempotency keys, several recipients at once as SMTP submission makes, scheduled and
// not), both must give the same answers and leave the same messages, counts and keys.
import fc from 'fast-check';
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { createWriteBatcher, type BulkKind, type WriteBatcher } from '../../src/db/group-commit.js';
import { createEventBus } from '../../src/events/bus.js';
import { isAppError } from '../../src/lib/errors.js';
import { createLogger } from '../../src/lib/logger.js';
import { createLedger } from '../../src/messages/ledger.js';
import { createAccept, type AcceptResponse } from '../../src/outbound/accept.js';
import { testDatabases } from '../helpers/databases.js';
import { countingStatements, openMigrated } from '../helpers/migrated-database.js';
import { holds } from '../helpers/property.js';

const AT = '2026-11-28T00:00:00.000Z';
const QUOTA = 4;

const sendArb = fc.record({
  // 0: a workspace on the plan with a quota, 1: one without.
  workspace: fc.integer({ min: 0, max: 1 }),
  livemode: fc.boolean(),
  key: fc.option(fc.constantFrom('k1', 'k2', 'k3'), { nil: null }),
  recipients: fc.integer({ min: 1, max: 3 }),
  scheduled: fc.boolean(),
});
type Send = typeof sendArb extends fc.Arbitrary<infer S> ? S : never;

for (const dbName of testDatabases()) {
  t.test(`sends accepted together equal the same sends accepted one by one (${dbName})`, async (t) => {
    const { db, dialect } = await openMigrated(t, dbName);
    const { db: raw, count: rawMany } = countingStatements(db, 'insert into messages');
    // SQLite's multi-row insert is a query builder's INSERT of several VALUES rows, not raw SQL.
    let valuesMany = 0;
    const counted = raw.withPlugin({
      transformQuery(args) {
        const node = args.node as { kind: string; into?: { table?: { identifier?: { name?: string } } }; values?: { values?: unknown[] } };
        if (node.kind === 'InsertQueryNode' && node.into?.table?.identifier?.name === 'messages' && (node.values?.values?.length ?? 0) > 1)
          valuesMany++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const many = () => (dialect === 'postgres' ? rawMany() : valuesMany);
    const config = loadConfig({ overrides: { plans: { free: { messagesPerMonth: QUOTA } } } });
    let n = 0;
    // Sends made at once reach the commit in the order their earlier awaits (a key's lookup)
    // happen to end. The gate holds them until all have arrived and hands them on in the order
    // they were made, in one turn, so one batch holds them in the order the plain path takes.
    const writes = createWriteBatcher(counted, dialect);
    let held: { kind: BulkKind<unknown, unknown>; item: unknown; settle(p: Promise<unknown>): void }[] | null = null;
    const gate: WriteBatcher = {
      run: (write, opts) => writes.run(write, opts),
      runBulk<I, O>(kind: BulkKind<I, O>, item: I): Promise<O> {
        if (!held) return writes.runBulk(kind, item);
        return new Promise<O>((resolve, reject) =>
          held!.push({ kind: kind, item, settle: (p) => void (p as Promise<O>).then(resolve, reject) }),
        );
      },
    };
    const sendOf = (item: unknown) =>
      Number((JSON.parse((item as { rows: { row: { metadata: string } }[] }).rows[0].row.metadata) as { send: string }).send);
    const deps = {
      config,
      db: counted,
      dialect,
      writes: gate,
      clock: { now: () => new Date(AT) },
      ids: { uuid: () => `u${String(++n).padStart(8, '0')}`, publicId: (prefix: string) => `${prefix}_${String(++n).padStart(8, '0')}` },
      bus: createEventBus(),
      log: createLogger('silent'),
    };
    const ledger = createLedger(deps);
    const accept = createAccept({
      ...deps,
      ledger,
      templates: {
        resolveForSend: () => Promise.reject(new Error('the generated sends carry their content')),
      },
      checks: [],
      accepted: () => {},
    });
    let run = 0;

    // Accepts `sends` on the workspaces of `prefix`, together or one by one; what each answered.
    async function sendAll(prefix: string, sends: Send[], together: boolean): Promise<unknown[]> {
      const plans = ['free', 'custom'] as const;
      for (const [i, plan] of plans.entries())
        await db
          .insertInto('workspaces')
          .values({ id: `${prefix}${i}`, slug: `${prefix}${i}`, name: 'w', plan, created_at: AT })
          .execute();
      const one = (s: Send) => {
        const sender = { workspace: { id: `${prefix}${s.workspace}`, plan: plans[s.workspace] }, livemode: s.livemode };
        const body = {
          to: 'ann@example.com',
          channel: 'email',
          content: { subject: 'hi', text: 'x' },
          metadata: { send: String(sends.indexOf(s)) },
          ...(s.scheduled ? { scheduledAt: '2026-11-29T00:00:00.000Z' } : {}),
        };
        const items = Array.from({ length: s.recipients }, (_, r) => ({
          body: { ...body, to: `r${r}@example.com` },
          raw: true,
          // A repeated key makes a send of several recipients accept again, queued behind the
          // others: a different order of commits, not a different path. Shared keys are the single
          // recipient sends' (a repeat answers at once).
          idempotencyKey: s.key === null ? null : s.recipients === 1 ? `${s.key}.0` : `m${sends.indexOf(s)}.${r}`,
        }));
        return (
          s.recipients === 1 ? accept.accept(sender, items[0].body, items[0]).then((a) => [a]) : accept.acceptMany(sender, items)
        ).then(
          (answers: AcceptResponse[]) => ({ answers }),
          (err: unknown) => ({ refused: isAppError(err) ? err.code : String(err) }),
        );
      };
      if (together) {
        held = [];
        const answers = Promise.all(sends.map(one));
        while (held.length < sends.length) await new Promise((r) => setImmediate(r));
        const arrived = held.sort((a, b) => sendOf(a.item) - sendOf(b.item));
        held = null;
        for (const h of arrived) h.settle(writes.runBulk(h.kind, h.item));
        return answers;
      }
      const out = [];
      for (const s of sends) out.push(await one(s));
      return out;
    }

    // What the workspaces of `prefix` hold, each message named by the send and recipient that
    // first answered with it (concurrent sends may commit in another order than they were made).
    async function stored(prefix: string, answers: unknown[]) {
      const label = new Map<string, string>();
      answers.forEach((a, i) =>
        (a as { answers?: AcceptResponse[] }).answers?.forEach((r, k) => label.has(r.id) || label.set(r.id, `${i}.${k}`)),
      );
      const rows = (await db.selectFrom('messages').selectAll().where('workspace_id', 'like', `${prefix}%`).execute())
        .map((r) => ({ ...r, label: label.get(r.public_id) ?? '?' }))
        .sort((a, b) => a.label.localeCompare(b.label));
      const labelOfId = new Map(rows.map((r) => [r.id, r.label]));
      const usage = await db
        .selectFrom('message_usage')
        .selectAll()
        .where('workspace_id', 'like', `${prefix}%`)
        .orderBy('workspace_id')
        .execute();
      const keys = await db
        .selectFrom('message_idempotency')
        .selectAll()
        .where('workspace_id', 'like', `${prefix}%`)
        .orderBy(['workspace_id', 'livemode', 'key'])
        .execute();
      const local = (ws: string) => ws.slice(prefix.length);
      const named = (text: string) =>
        JSON.parse(text, (k, v: unknown) => (k === 'id' && typeof v === 'string' ? (label.get(v) ?? '?') : v)) as unknown;
      return JSON.stringify({
        answers: named(JSON.stringify(answers)),
        rows: rows.map(({ seq: _s, id: _i, public_id: _p, search_text: _t, workspace_id, ...r }) => ({ ...r, ws: local(workspace_id) })),
        usage: usage.map((u) => ({ ...u, workspace_id: local(u.workspace_id) })),
        keys: keys.map((k) => ({
          ...k,
          workspace_id: local(k.workspace_id),
          message_id: labelOfId.get(k.message_id),
          response: named(k.response),
        })),
      });
    }

    await holds(
      t,
      'generated sends: the same answers, messages, counts and keys as one by one',
      fc.asyncProperty(
        fc.array(sendArb, { minLength: 1, maxLength: 10 }).map((sends) => sends.map((s) => ({ ...s }))),
        async (sends) => {
          run++;
          const [tp, ap] = [`t${run}_`, `a${run}_`];
          const together = await stored(tp, await sendAll(tp, sends, true));
          const alone = await stored(ap, await sendAll(ap, sends, false));
          if (together !== alone) throw new Error(`together ${together}\nalone    ${alone}`);
        },
      ),
      60,
    );
    t.ok(many() > 0, `the multi-row insert was reached (${many()} times)`);
  });
}
