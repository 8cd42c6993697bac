// POST /v1/send/batch on a booted daemon: atomic and partial modes, the envelope's refusals, the
// batch's Idempotency-Key and per-message keys, the quota; and its oracle, the plain path: each
// message of a partial batch is answered (and stored) as POST /v1/send answers it alone.
import fc from 'fast-check';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { holds } from '../helpers/property.js';

const email = (to: string, extra: Record<string, unknown> = {}) => ({
  to,
  channel: 'email',
  content: { subject: 'Hi', text: 'Hello' },
  ...extra,
});

async function stored(d: TestDaemon, workspaceId: string) {
  return d.app.db
    .selectFrom('messages')
    .innerJoin('message_contents', 'message_contents.message_id', 'messages.id')
    .select(['public_id', 'recipient', 'status', 'channel', 'template_slug', 'content', 'metadata', 'scheduled_at', 'idempotency_key'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('seq')
    .execute();
}

for (const db of testDatabases()) {
  t.test(`batch send on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_PLANS_FREE_MESSAGES_PER_MONTH: '3' } });
    const acme = await d.workspace('acme', { plan: 'pro' });
    const batch = (key: string, body: unknown, headers?: Record<string, string>) =>
      d.request('POST', '/v1/send/batch', { key, body, headers });
    const publishWelcome = async (key: string) => {
      t.ok((await d.request('POST', '/v1/templates', { key, body: { slug: 'welcome', channel: 'email' } })).status < 300);
      const draft = { content: { subject: 'Hi {{name}}', text: 'Hello {{name}}' }, variables: [] };
      t.ok((await d.request('PUT', '/v1/templates/welcome/draft', { key, body: draft })).status < 300);
      t.ok((await d.request('POST', '/v1/templates/welcome/publish', { key })).status < 300);
    };
    await publishWelcome(acme.test);

    t.test('atomic: every message accepted, answered in order, stored in order', async (t) => {
      const r = await batch(acme.test, {
        messages: [
          email('a1@example.com'),
          { template: 'welcome', to: 'a2@example.com', vars: { name: 'Ann' }, metadata: { n: 2 } },
          { to: '+14155550100', channel: 'sms', content: { body: 'hi' } },
        ],
      });
      t.equal(r.status, 202);
      t.equal(r.body.data.length, 3);
      for (const item of r.body.data) t.match(item, { id: /^msg_/, status: 'queued', livemode: false });
      const rows = (await stored(d, acme.id)).filter((m) => r.body.data.some((x: { id: string }) => x.id === m.public_id));
      t.same(
        rows.map((m) => [m.public_id, m.recipient, m.template_slug]),
        [
          [r.body.data[0].id, 'a1@example.com', null],
          [r.body.data[1].id, 'a2@example.com', 'welcome'],
          [r.body.data[2].id, '+14155550100', null],
        ],
      );
      const one = await d.request('GET', `/v1/messages/${r.body.data[1].id}`, { key: acme.test });
      t.match(one.body, { metadata: { n: 2 }, templateSlug: 'welcome' }, 'a message like any other');
    });

    t.test('atomic: one refused message refuses the batch, every issue listed under messages.{i}', async (t) => {
      const before = (await stored(d, acme.id)).length;
      const r = await batch(acme.test, {
        mode: 'atomic',
        messages: [
          email('ok@example.com'),
          email('not-an-address'),
          email('ok2@example.com', { scheduled_at: 'x' }),
          { template: 'nope', to: 'x@example.com' },
        ],
      });
      t.equal(r.status, 422);
      t.equal(r.body.error.code, 'invalid_body');
      t.same(
        r.body.error.issues.map((i: { path: string }) => i.path),
        ['messages.1.to', 'messages.2.scheduled_at', 'messages.3.template'],
      );
      t.match(r.body.error.issues[1].message, /did you mean scheduledAt/);
      t.equal((await stored(d, acme.id)).length, before, 'nothing stored');
    });

    t.test('partial: refused messages answered in their place, the rest accepted', async (t) => {
      const before = (await stored(d, acme.id)).length;
      const r = await batch(acme.test, {
        mode: 'partial',
        messages: [email('p1@example.com'), email('bad'), 'not an object', email('p2@example.com')],
      });
      t.equal(r.status, 202);
      t.match(r.body.data[0], { id: /^msg_/, status: 'queued' });
      t.match(r.body.data[1], { error: { code: 'invalid_body', issues: [{ path: 'to' }] } });
      t.match(r.body.data[2], {
        error: { code: 'invalid_body', issues: [{ path: '', message: 'the request body must be a JSON object' }] },
      });
      t.match(r.body.data[3], { id: /^msg_/, status: 'queued' });
      t.equal((await stored(d, acme.id)).length, before + 2);
    });

    t.test("the envelope's problems refuse the request", async (t) => {
      const cases: [unknown, string][] = [
        [[], ''],
        [{ messages: [] }, 'messages'],
        [{ messages: 'x' }, 'messages'],
        [{ messages: Array.from({ length: 501 }, (_v, i) => email(`m${i}@example.com`)) }, 'messages'],
        [{ messages: [email('a@example.com')], mode: 'some' }, 'mode'],
        [{ messages: [email('a@example.com')], modes: 'partial' }, 'modes'],
      ];
      for (const [body, path] of cases) {
        const r = await batch(acme.test, body);
        t.equal(r.status, 422, JSON.stringify(body).slice(0, 60));
        t.equal(r.body.error.code, 'invalid_body');
        t.equal(r.body.error.issues[0].path, path);
      }
      const max = await batch(acme.test, { messages: Array.from({ length: 500 }, (_v, i) => email(`max${i}@example.com`)) });
      t.equal(max.status, 202, '500 messages are one batch');
      t.equal(max.body.data.length, 500);
    });

    t.test("the batch's Idempotency-Key answers a repeat as the original, storing nothing again", async (t) => {
      const body = { mode: 'partial', messages: [email('k1@example.com'), email('bad')] };
      const first = await batch(acme.test, body, { 'idempotency-key': 'batch-1' });
      t.equal(first.status, 202);
      const before = (await stored(d, acme.id)).length;
      const again = await batch(acme.test, body, { 'idempotency-key': 'batch-1' });
      t.same(again.body, first.body);
      t.equal((await stored(d, acme.id)).length, before, 'no second message');
      // A key of a single send does not answer a batch, nor the other way round.
      const single = await d.request('POST', '/v1/send', {
        key: acme.test,
        body: email('k2@example.com'),
        headers: { 'idempotency-key': 'batch-1' },
      });
      t.equal(single.status, 202);
      t.notOk(first.body.data.some((x: { id?: string }) => x.id === single.body.id));
      // Concurrent repeats: one batch stored, every answer the same.
      const racing = await Promise.all(
        Array.from({ length: 4 }, () => batch(acme.test, { messages: [email('race@example.com')] }, { 'idempotency-key': 'batch-race' })),
      );
      t.same(new Set(racing.map((r) => r.body.data[0].id)).size, 1);
      t.equal((await stored(d, acme.id)).filter((m) => m.recipient === 'race@example.com').length, 1);
    });

    t.test('per-message keys: a repeat answers as the original; one key twice in a batch is refused', async (t) => {
      const single = await d.request('POST', '/v1/send', {
        key: acme.test,
        body: email('pk@example.com'),
        headers: { 'idempotency-key': 'item-1' },
      });
      const r = await batch(acme.test, {
        mode: 'partial',
        messages: [
          { ...email('pk@example.com'), idempotencyKey: 'item-1' },
          { ...email('pk2@example.com'), idempotencyKey: 'item-2' },
          { ...email('pk3@example.com'), idempotencyKey: 'item-2' },
          { ...email('pk4@example.com'), idempotencyKey: 7 },
        ],
      });
      t.equal(r.status, 202);
      t.same(r.body.data[0], single.body, "the single send's answer");
      t.match(r.body.data[1], { id: /^msg_/ });
      t.match(r.body.data[2], {
        error: { code: 'invalid_body', issues: [{ path: 'idempotencyKey', message: 'repeats the key of message 1' }] },
      });
      t.match(r.body.data[3], { error: { code: 'invalid_request' } });
      const m = await d.request('GET', `/v1/messages/${r.body.data[1].id}`, { key: acme.test });
      t.equal(m.body.idempotencyKey, 'item-2');
    });

    t.test('a batch over the quota is refused whole (429), nothing stored', async (t) => {
      const free = await d.workspace('small', { plan: 'free' });
      const r = await batch(free.live, {
        mode: 'partial',
        messages: [email('q1@example.com'), email('q2@example.com'), email('q3@example.com'), email('q4@example.com')],
      });
      t.equal(r.status, 429);
      t.equal(r.body.error.code, 'quota_exceeded');
      t.same(await stored(d, free.id), []);
      const fits = await batch(free.live, { messages: [email('q1@example.com'), email('q2@example.com'), email('q3@example.com')] });
      t.equal(fits.status, 202, 'three fit a quota of three');
    });

    t.test('oracle: each message of a partial batch is answered and stored as POST /v1/send answers it alone', async (t) => {
      const solo = await d.workspace('solo', { plan: 'pro' });
      const other = await d.workspace('together', { plan: 'pro' });
      for (const ws of [solo, other]) await publishWelcome(ws.test);
      const later = new Date(d.clock.now().getTime() + 3600_000).toISOString();
      const shapes: fc.Arbitrary<unknown>[] = [
        fc.emailAddress().map((to) => email(to)),
        fc.constantFrom('not-an-address', 'a@b', '').map((to) => email(to)),
        fc.string({ maxLength: 12 }).map((name) => ({ template: 'welcome', to: 'tpl@example.com', vars: { name } })),
        fc.constant({ template: 'missing', to: 'tpl@example.com' }),
        fc.constant({ to: '+14155550100', channel: 'sms', content: { body: 'x' } }),
        fc.constant({ to: '555', channel: 'sms', content: { body: 'x' } }),
        fc.constant(email('sched@example.com', { scheduledAt: later })),
        fc.constant(email('meta@example.com', { metadata: { a: { nested: true } } })),
        fc.constant(email('x@example.com', { unknown: 1 })),
      ];
      let round = 0;
      await holds(
        t,
        'partial batch = each send alone',
        fc.asyncProperty(fc.array(fc.oneof(...shapes), { minLength: 1, maxLength: 8 }), async (messages) => {
          round++;
          const beforeSolo = (await stored(d, solo.id)).length;
          const beforeTogether = (await stored(d, other.id)).length;
          const alone = [];
          for (const m of messages) alone.push(await d.request('POST', '/v1/send', { key: solo.test, body: m }));
          const together = await batch(other.test, { mode: 'partial', messages });
          if (together.status !== 202) throw new Error(`batch answered ${together.status}: ${JSON.stringify(together.body)}`);
          const shape = (status: number, body: any) =>
            status === 202
              ? { status: body.status, livemode: body.livemode }
              : { code: body.error.code, message: body.error.message, issues: body.error.issues };
          const expected = alone.map((a) => shape(a.status, a.body));
          const got = together.body.data.map((x: any) => ('error' in x ? shape(422, x) : shape(202, x)));
          if (JSON.stringify(got) !== JSON.stringify(expected)) throw new Error(`round ${round}: ${JSON.stringify({ got, expected })}`);
          const view = (rows: Awaited<ReturnType<typeof stored>>) =>
            rows.map((m) => ({
              recipient: m.recipient,
              channel: m.channel,
              template: m.template_slug,
              content: m.content,
              metadata: m.metadata,
              scheduledAt: m.scheduled_at,
            }));
          const a = view((await stored(d, solo.id)).slice(beforeSolo));
          const b = view((await stored(d, other.id)).slice(beforeTogether));
          if (JSON.stringify(a) !== JSON.stringify(b))
            throw new Error(`round ${round}: stored ${JSON.stringify({ alone: a, together: b })}`);
        }),
        30,
      );
    });
  });
}
