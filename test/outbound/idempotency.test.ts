// Idempotency-Key on POST /v1/send (interface: "a repeat request with the same key in the same
// workspace and environment returns the original send instead of creating a duplicate"). The key
// lives 24 hours (src/outbound/accept.ts), driven here with the daemon's ManualClock; and repeats
// that arrive together are forced past the early lookup outside the transaction, so the check
// inside the accept transaction is the one that decides.
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

const HOUR = 3600_000;
const email = (to: string) => ({ to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } });

async function rowsFor(d: TestDaemon, recipient: string): Promise<string[]> {
  const rows = await d.app.db.selectFrom('messages').select('public_id').where('recipient', '=', recipient).execute();
  return rows.map((r) => r.public_id);
}

for (const db of testDatabases()) {
  t.test(`idempotency on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_PLANS_FREE_MESSAGES_PER_MONTH: '1' } });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const send = (to: string, key: string) =>
      d.request('POST', '/v1/send', { key: ws.test, body: email(to), headers: { 'idempotency-key': key } });

    t.test('a repeat at 23 h returns the original; at 25 h it is a new message', async (t) => {
      const first = await send('window@example.com', 'window-1');
      t.equal(first.status, 202);
      t.match(first.body, { id: /^msg_/, status: 'queued' });

      d.clock.advance(23 * HOUR);
      const at23 = await send('window@example.com', 'window-1');
      t.equal(at23.status, 202);
      t.same(at23.body, first.body, 'the original answer, 23 h later');
      t.same(await rowsFor(d, 'window@example.com'), [first.body.id], 'no second message');

      d.clock.advance(2 * HOUR);
      const at25 = await send('window@example.com', 'window-1');
      t.equal(at25.status, 202);
      t.match(at25.body, { id: /^msg_/ });
      t.not(at25.body.id, first.body.id, 'the key expired after 24 h: a new message');
      t.same((await rowsFor(d, 'window@example.com')).sort(), [first.body.id, at25.body.id].sort(), 'two messages');
      t.equal((await send('window@example.com', 'window-1')).body.id, at25.body.id, 'the key now names the new message');
    });

    t.test('concurrent repeats past the early lookup: one message, every answer names it', async (t) => {
      const N = 8;
      // An accept check runs after the lookup outside the transaction and before the transaction:
      // holding every request there until all N arrived makes all of them miss the early lookup,
      // so they race into the accept transaction together.
      let arrived = 0;
      let openGate!: () => void;
      const gate = new Promise<void>((r) => (openGate = r));
      d.app.outbound.addAcceptCheck(async ({ message }) => {
        if (message.recipient !== 'race@example.com') return;
        if (++arrived === N) openGate();
        await gate;
      });
      const answers = await Promise.all(Array.from({ length: N }, () => send('race@example.com', 'race-1')));
      t.equal(arrived, N, 'every request passed the early lookup before any committed');
      t.same(
        answers.map((a) => a.status),
        Array(N).fill(202),
      );
      const ids = new Set(answers.map((a) => a.body.id));
      t.equal(ids.size, 1, 'every answer names the same message');
      t.same(await rowsFor(d, 'race@example.com'), [...ids], 'exactly one message');
      const m = await d.request('GET', `/v1/messages/${[...ids][0]}`, { key: ws.test });
      t.equal(m.body.idempotencyKey, 'race-1');
    });

    t.test('a batch (SMTP submission) that loses the race for one of its keys is accepted whole, its answers in order', async (t) => {
      // The batch's first send and an API send with the same key meet at the accept check, so both
      // miss the early lookup; the batch's second send then waits for the API send's answer, so the
      // API send commits first and the batch's transaction meets the key taken.
      let arrived = 0;
      let openGate!: () => void;
      const gate = new Promise<void>((r) => (openGate = r));
      let apiAnswered!: () => void;
      const apiDone = new Promise<void>((r) => (apiAnswered = r));
      d.app.outbound.addAcceptCheck(async ({ message }) => {
        if (message.recipient === 'batch-a@example.com' && arrived < 2) {
          if (++arrived === 2) openGate();
          await gate;
        }
        if (message.recipient === 'batch-b@example.com') await apiDone;
      });
      const sender = { workspace: { id: ws.id, plan: 'pro' }, livemode: false };
      const batch = d.app.outbound.acceptMany(sender, [
        { body: email('batch-a@example.com'), raw: true, idempotencyKey: 'batch-a' },
        { body: email('batch-b@example.com'), raw: true, idempotencyKey: 'batch-b' },
        { body: email('batch-c@example.com'), raw: true, idempotencyKey: null },
      ]);
      const api = await send('batch-a@example.com', 'batch-a');
      apiAnswered();
      const answers = await batch;
      t.equal(api.status, 202);
      t.equal(answers.length, 3, 'an answer for every send of the batch');
      t.equal(answers[0].id, api.body.id, "the raced send answers with the API send's message");
      t.same(await rowsFor(d, 'batch-a@example.com'), [api.body.id], 'one message for the raced key');
      t.same(await rowsFor(d, 'batch-b@example.com'), [answers[1].id], 'the second send, once');
      t.same(await rowsFor(d, 'batch-c@example.com'), [answers[2].id], 'the third, once');
    });

    t.test('concurrent repeats of the send that uses up the quota: each gets its answer, not a refusal', async (t) => {
      // The free plan here allows one live message a month. Every repeat races into the accept
      // transaction with the original (as above); one that reached the quota before the key would
      // be refused as over quota although its send was accepted.
      const free = await d.workspace('edge');
      const N = 6;
      let arrived = 0;
      let openGate!: () => void;
      const gate = new Promise<void>((r) => (openGate = r));
      d.app.outbound.addAcceptCheck(async ({ message }) => {
        if (message.recipient !== 'edge@example.com') return;
        if (++arrived === N) openGate();
        await gate;
      });
      const answers = await Promise.all(
        Array.from({ length: N }, () =>
          d.request('POST', '/v1/send', { key: free.live, body: email('edge@example.com'), headers: { 'idempotency-key': 'edge-1' } }),
        ),
      );
      t.same(
        answers.map((a) => a.status),
        Array(N).fill(202),
        JSON.stringify(answers.map((a) => a.body)),
      );
      t.equal(new Set(answers.map((a) => a.body.id)).size, 1, 'every answer names the one message');
      t.same(await rowsFor(d, 'edge@example.com'), [answers[0].body.id]);
      const over = await d.request('POST', '/v1/send', { key: free.live, body: email('edge@example.com') });
      t.equal(over.status, 429, 'the quota is used up by that one message');
    });
  });
}
