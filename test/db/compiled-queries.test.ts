// Statements compiled once run exactly as Kysely builds them, on every dialect; a shape whose
// stated parameters do not match Kysely's is never reused.
import t from 'tap';
import { createQueryCache } from '../../src/db/compiled-queries.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`compiled queries on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    // The messages stay queued for the ledger's writes below: no dispatcher pass takes them meanwhile.
    await d.app.workers.find((w) => w.name === 'dispatcher')!.stop();
    const ws = await d.workspace('acme');
    const sent = await d.request('POST', '/v1/send-raw', {
      key: ws.test,
      body: { to: 'ann@example.com', channel: 'email', content: { subject: 'hi', text: 'x' } },
    });
    t.equal(sent.status, 202, 'the accept insert (compiled once) works');
    const again = await d.request('POST', '/v1/send-raw', {
      key: ws.test,
      body: { to: 'bob@example.com', channel: 'email', content: { subject: 'hi', text: 'y' } },
    });
    t.equal(again.status, 202, 'and its reuse with new values');
    const row = await d.app.db.selectFrom('messages').selectAll().where('public_id', '=', again.body.id).executeTakeFirstOrThrow();
    t.equal(row.recipient, 'bob@example.com');

    // The ledger's compare-and-swap on (status, lease), compiled once per shape.
    const queries = createQueryCache();
    await d.app.db.updateTable('messages').set({ locked_by: 'tok' }).where('id', '=', row.id).execute();
    const change = (n: number, status = row.status) =>
      d.app.ledger.change({ ...row, status }).set({ attempts: n, error: null, updated_at: `t${n}` });
    t.ok(await d.app.ledger.commit(change(1), { lease: 'tok' }), 'first use: built');
    t.ok(await d.app.ledger.commit(change(2), { lease: 'tok' }), 'second use: reused');
    t.equal(await d.app.ledger.commit(change(3), { lease: 'other' }), null, 'a lost lease matches nothing');
    t.equal(await d.app.ledger.commit(change(4, 'failed'), { lease: 'tok' }), null, 'nor does another status');
    const after = await d.app.db
      .selectFrom('messages')
      .select(['attempts', 'updated_at', 'error'])
      .where('id', '=', row.id)
      .executeTakeFirstOrThrow();
    t.same({ ...after, attempts: Number(after.attempts) }, { attempts: 2, updated_at: 't2', error: null });

    // The dispatcher's shapes are reused, not rebuilt (Kysely binds in the order stated).
    let builds = 0;
    const outcome = {
      provider: 'p',
      latency_ms: 3,
      provider_message_id: null,
      status: 'delivered' as const,
      timeline: '[]',
      error: null,
      due_at: null,
      locked_by: null,
    };
    for (let i = 0; i < 3; i++) {
      queries.compiled(
        'outcome',
        [...Object.values(outcome), row.id, 'dispatched', 'tok'],
        () => (
          builds++,
          d.app.db
            .updateTable('messages')
            .set(outcome)
            .where('id', '=', row.id)
            .where('status', '=', 'dispatched')
            .where('locked_by', '=', 'tok')
        ),
      );
    }
    t.equal(builds, 1, 'an update shape is built once');
  });
}

t.test('a shape whose parameters are misstated is built every time', async (t) => {
  const queries = createQueryCache();
  let builds = 0;
  const fake = (params: unknown[]) => ({
    compile: () => (builds++, { sql: 'select ?', parameters: params, query: {} as never, queryId: {} as never }),
  });
  queries.compiled('k', ['a'], () => fake(['b']));
  const q = queries.compiled('k', ['c'], () => fake(['c']));
  t.equal(builds, 2);
  t.same(q.parameters, ['c']);
  queries.compiled('ok', [1], () => fake([1]));
  const reused = queries.compiled('ok', [2], () => fake([2]));
  t.equal(builds, 3, 'a matching shape is built once');
  t.same(reused.parameters, [2]);
  t.equal(reused.sql, 'select ?');
});
