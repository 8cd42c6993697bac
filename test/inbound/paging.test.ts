// Paging received mail by `before` sees every message once, even when many arrive within one
// millisecond (receivedAt carries nine fractional digits and strictly increases).
import t from 'tap';
import { up } from '../../src/db/migrations/0009-received-stamps.js';
import { ManualClock } from '../helpers/clock.js';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';

for (const db of testDatabases()) {
  t.test(`a burst within one millisecond pages without a miss or a repeat (${db})`, async (t) => {
    const clock = new ManualClock('2026-03-01T12:00:00.000Z'); // frozen: every message in one millisecond
    const env = await setup(t, { db, clock });
    const a = await createAddress(env, { localPart: 'a' });
    const b = await createAddress(env, { localPart: 'b' });
    const subjects: string[] = [];
    for (let i = 0; i < 12; i++) {
      subjects.push(`m${i}`);
      await sendRaw(env.d.smtpPort, { from: 'x@example.org', to: [a.address] }, simpleMail({ to: a.address, subject: `m${i}` }));
    }
    // One message to two addresses of the workspace: two rows, each listed once.
    await sendRaw(env.d.smtpPort, { from: 'x@example.org', to: [a.address, b.address] }, simpleMail({ to: a.address, subject: 'both' }));
    subjects.push('both', 'both');

    const seen: string[] = [];
    const ids = new Set<string>();
    let before: string | undefined;
    for (let page = 0; page < 20; page++) {
      const q = `?limit=5${before ? `&before=${encodeURIComponent(before)}` : ''}`;
      const res = await env.d.request('GET', `/v1/inbound/messages${q}`, { key: env.ws.live });
      t.equal(res.status, 200);
      const messages = res.body.messages as { id: string; subject: string; receivedAt: string }[];
      if (messages.length === 0) break;
      for (const m of messages) {
        t.notOk(ids.has(m.id), `${m.id} is listed once`);
        ids.add(m.id);
        seen.push(m.subject);
        t.match(m.receivedAt, /^2026-03-01T12:00:00\.000\d{6}Z$/);
      }
      before = messages[messages.length - 1].receivedAt;
    }
    t.same(seen.sort(), subjects.sort(), 'every message appears across the pages');
    t.equal(ids.size, 14);

    // A `before` carrying only milliseconds still means the whole millisecond before it.
    const older = await env.d.request('GET', `/v1/inbound/messages?before=${encodeURIComponent('2026-03-01T12:00:00.000Z')}`, {
      key: env.ws.live,
    });
    t.same(older.body.messages, []);
    const later = await env.d.request('GET', `/v1/inbound/messages?limit=100&before=${encodeURIComponent('2026-03-01T12:00:00.001Z')}`, {
      key: env.ws.live,
    });
    t.equal(later.body.messages.length, 14);
  });
}

t.test('rows stamped with three fractional digits (0.1.0) are brought to the nine-digit form', async (t) => {
  const env = await setup(t, { clock: new ManualClock('2026-03-01T12:00:00.000Z') });
  const a = await createAddress(env, { localPart: 'a' });
  for (const subject of ['old', 'new']) {
    await sendRaw(env.d.smtpPort, { from: 'x@example.org', to: [a.address] }, simpleMail({ to: a.address, subject }));
    env.d.clock.advance(1);
  }
  const db = env.d.app.db;
  // As 0.1.0 wrote the first message.
  for (const table of ['received_messages', 'inbound_raw'] as const) {
    await db
      .updateTable(table)
      .set({ received_at: '2026-03-01T12:00:00.000Z' })
      .where('received_at', '<', '2026-03-01T12:00:00.001')
      .execute();
  }
  await up(db);
  const stamps = [
    ...(await db.selectFrom('received_messages').select('received_at').execute()),
    ...(await db.selectFrom('inbound_raw').select('received_at').execute()),
  ].map((r) => r.received_at);
  t.same(stamps.sort(), [
    '2026-03-01T12:00:00.000000000Z',
    '2026-03-01T12:00:00.000000000Z',
    '2026-03-01T12:00:00.001000000Z',
    '2026-03-01T12:00:00.001000000Z',
  ]);
  const listed = await env.d.request('GET', `/v1/inbound/messages?before=${encodeURIComponent('2026-03-01T12:00:00.001Z')}`, {
    key: env.ws.live,
  });
  t.match(listed.body.messages, [{ subject: 'old' }]);
  t.equal(listed.body.messages.length, 1);
});
