// What accept (outbound/accept.ts) commits before its 202, read back from the database: the message
// row as the body described it, the timeline the ledger opens, the template resolved, the plan
// quota counted, the idempotency key stored, the accept checks consulted, and nothing at all when
// the send is refused. Concurrent repeats and the 23 h / 25 h window are in test/outbound/idempotency.test.ts; this
// file is the single-request rules.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { usageShardOf } from '../../src/outbound/accept.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { dashboardLogin } from '../helpers/dashboard.js';

const email = (extra: Record<string, unknown> = {}) => ({
  to: 'ann@example.com',
  channel: 'email',
  content: { subject: 'Hi', text: 'Hello' },
  ...extra,
});

t.test("a node's usage shard: 1-15 (0 is the quota's), the same for one id, spread over node ids", async (t) => {
  const shards = Array.from({ length: 600 }, () => usageShardOf(randomUUID()));
  t.ok(
    shards.every((s) => Number.isInteger(s) && s >= 1 && s <= 15),
    'within 1-15',
  );
  t.equal(new Set(shards).size, 15, 'every shard used');
  const id = randomUUID();
  t.equal(usageShardOf(id), usageShardOf(id));
});

for (const db of testDatabases()) {
  t.test(`accept (${db})`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_PLANS_FREE_MESSAGES_PER_MONTH: '2' } });
    const acme = await d.workspace('acme', { plan: 'pro' });
    const send = (key: string, body: unknown, headers?: Record<string, string>, path = '/v1/send') =>
      d.request('POST', path, { key, body, headers });
    const row = (publicId: string) =>
      d.app.db
        .selectFrom('messages')
        .innerJoin('message_contents', 'message_contents.message_id', 'messages.id')
        .selectAll()
        .where('public_id', '=', publicId)
        .executeTakeFirstOrThrow();
    const count = async () =>
      Number(
        (
          await d.app.db
            .selectFrom('messages')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    t.test('the row is the body, with the timeline the ledger opens', async (t) => {
      const seen: string[] = [];
      const stop = d.app.ledger.watch((m) => seen.push(`${m.publicId}:${m.status}`));
      t.teardown(stop);
      const now = d.clock.now().toISOString();
      const attachment = { filename: 'a.txt', contentType: 'text/plain', content: 'SGVsbG8=' };
      const r = await send(
        acme.live,
        email({
          from: 'news@acme.example',
          fromName: 'Acme News',
          cc: 'cc@example.com',
          bcc: ['b1@example.com', 'b2@example.com'],
          replyTo: 'reply@acme.example',
          attachments: [attachment],
          metadata: { order: 42, vip: true, ref: 'A-1' },
          vars: { name: 'Ann' },
          interpolate: true,
        }),
        { 'idempotency-key': 'row-1' },
        '/v1/send-raw',
      );
      t.equal(r.status, 202, JSON.stringify(r.body));
      t.same(r.body, { id: r.body.id, status: 'queued', livemode: true });
      t.match(r.body.id, /^msg_/);
      const m = await row(r.body.id);
      t.match(m, {
        workspace_id: acme.id,
        livemode: 1,
        channel: 'email',
        status: 'queued',
        recipient: 'ann@example.com',
        template_slug: null,
        template_version: null,
        pinned_version: null,
        interpolate: 1,
        from_override: 'news@acme.example',
        from_name_override: 'Acme News',
        reply_to: 'reply@acme.example',
        provider: null,
        error: null,
        created_at: now,
        scheduled_at: null,
        idempotency_key: 'row-1',
        attempts: 0,
        due_at: now,
        locked_until: null,
        locked_by: null,
        updated_at: now,
      });
      t.same(JSON.parse(m.content), { subject: 'Hi', text: 'Hello' });
      t.same(JSON.parse(m.cc), ['cc@example.com']);
      t.same(JSON.parse(m.bcc), ['b1@example.com', 'b2@example.com']);
      t.same(JSON.parse(m.attachments), [attachment]);
      t.same(JSON.parse(m.vars), { name: 'Ann' });
      t.same(JSON.parse(m.metadata), { order: 42, vip: true, ref: 'A-1' });
      t.match(m.metadata_text, /A-1/);
      t.match(m.search_text, new RegExp(r.body.id));
      t.match(m.search_text, /ann@example\.com/);
      t.same(JSON.parse(m.timeline), [{ t: now, e: 'accepted' }]);
      t.same(seen, [`${r.body.id}:queued`], 'watchers hear of the new message after its commit');

      const plain = await send(acme.test, email());
      const p = await row(plain.body.id);
      t.same(plain.body, { id: plain.body.id, status: 'queued', livemode: false });
      t.match(p, { livemode: 0, interpolate: 0, from_override: null, from_name_override: null, reply_to: null, idempotency_key: null });
      t.same([JSON.parse(p.cc), JSON.parse(p.bcc), JSON.parse(p.attachments)], [[], [], []], 'absent lists are stored empty');
      t.same([JSON.parse(p.vars), JSON.parse(p.metadata)], [{}, {}]);
      t.equal((await row((await send(acme.test, email({ interpolate: false }))).body.id)).interpolate, 0);
    });

    t.test('a scheduled send', async (t) => {
      const now = d.clock.now();
      const at = new Date(now.getTime() + 3600_000);
      // Given with an offset; stored as UTC.
      const local = new Date(at.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      const r = await send(acme.live, email({ scheduledAt: local }));
      t.same(r.body, { id: r.body.id, status: 'scheduled', livemode: true });
      const m = await row(r.body.id);
      t.match(m, { status: 'scheduled', scheduled_at: at.toISOString(), due_at: at.toISOString() });
      t.same(JSON.parse(m.timeline), [
        { t: now.toISOString(), e: 'accepted' },
        { t: now.toISOString(), e: 'scheduled' },
      ]);
    });

    t.test('template sends resolve the template and pin what was asked', async (t) => {
      t.ok((await d.request('POST', '/v1/templates', { key: acme.live, body: { slug: 'welcome', channel: 'email' } })).status < 300);
      const draft = (subject: string) =>
        d.request('PUT', '/v1/templates/welcome/draft', {
          key: acme.live,
          body: { content: { subject, text: 'Hi {{name}}' }, variables: [] },
        });
      t.ok((await draft('v1')).status < 300);
      t.ok((await d.request('POST', '/v1/templates/welcome/publish', { key: acme.live })).status < 300);
      t.ok((await draft('v2')).status < 300);
      t.ok((await d.request('POST', '/v1/templates/welcome/publish', { key: acme.live })).status < 300);

      const latest = await send(acme.live, { template: 'Welcome', to: 'ann@example.com', vars: { name: 'Ann' } });
      t.equal(latest.status, 202, JSON.stringify(latest.body));
      t.match(await row(latest.body.id), {
        channel: 'email',
        template_slug: 'welcome',
        template_version: 2,
        pinned_version: null,
        interpolate: 0,
      });
      t.same(JSON.parse((await row(latest.body.id)).content), { subject: 'v2', text: 'Hi {{name}}' });
      const pinned = await send(acme.live, { template: 'welcome', to: 'ann@example.com', version: 1 });
      t.match(await row(pinned.body.id), { template_slug: 'welcome', template_version: 1, pinned_version: 1 });
      t.same(JSON.parse((await row(pinned.body.id)).content), { subject: 'v1', text: 'Hi {{name}}' });

      const wrong = await send(acme.live, { template: 'welcome', channel: 'sms', to: '+14155550100' });
      t.equal(wrong.status, 422);
      t.same(wrong.body.error.issues, [
        { path: 'channel', message: 'template welcome is a email template' },
        { path: 'to', message: 'must be an email address' },
      ]);
      const named = await send(acme.live, { template: 'welcome', channel: 'email', to: 'ann@example.com' });
      t.equal(named.status, 202, 'a template send may name its own channel');
      const both = await send(acme.live, { template: 'nope', to: 'ann@example.com', replyTo: 'nope' });
      t.same(
        both.body.error.issues.map((i: { path: string }) => i.path).sort(),
        ['replyTo', 'template'],
        'a missing template is reported with the other issues',
      );
      const missing = await send(acme.live, { template: 'nope', to: 'ann@example.com' });
      t.equal(missing.status, 422);
      t.same(
        missing.body.error.issues.map((i: { path: string }) => i.path),
        ['template'],
      );
    });

    t.test('refused sends list every issue once and write nothing', async (t) => {
      const before = await count();
      const bad = await send(acme.live, {
        to: 'x'.repeat(9000),
        channel: 'email',
        content: { subject: 'Hi {{#a}}', text: 'x' },
        interpolate: true,
      });
      t.equal(bad.status, 422);
      t.same(
        bad.body.error.issues.map((i: { path: string }) => i.path),
        ['to', 'content.subject'],
        'the refused recipient once (not again as not an email address), and the broken template',
      );
      const twice = await send(acme.live, { to: 'nope', channel: 'email', content: { subject: 'Hi', text: 'x' }, cc: 'nope' });
      t.same(
        twice.body.error.issues.map((i: { path: string }) => i.path),
        ['cc', 'to'],
      );
      const notEmail = await send(acme.live, { to: 'nope', channel: 'email', content: { subject: 'Hi', text: 'x' } });
      t.same(notEmail.body.error.issues, [{ path: 'to', message: 'must be an email address' }], 'a channel issue is reported');
      const raw = await send(acme.live, { template: 'welcome', to: 'ann@example.com' }, undefined, '/v1/send-raw');
      t.same(
        raw.body.error.issues.map((i: { path: string }) => i.path),
        ['template'],
        'send-raw: raw rules',
      );
      const exactly = async (body: unknown, issues: unknown, why: string, path = '/v1/send') => {
        const r = await send(acme.live, body, undefined, path);
        t.equal(r.status, 422, why);
        t.same(r.body.error.issues, issues, why);
      };
      const content = { subject: 'Hi {{#a}}', text: 'x' };
      await exactly(
        { template: 'nope', channel: 'email', to: 'ann@example.com', content },
        [{ path: 'content', message: 'give either template or content, not both' }],
        'a body with both is not resolved as a template send',
      );
      await exactly(
        { to: 'ann@example.com', content, cc: 'cc@example.com', interpolate: true },
        [{ path: 'channel', message: 'channel is required for a raw send' }],
        'without a channel neither the channel rules nor the template check run',
      );
      await exactly(
        { template: 'nope', to: 'ann@example.com', interpolate: true },
        [
          { path: 'interpolate', message: 'interpolate applies to inline content only' },
          { path: 'template', message: 'no template nope in this workspace' },
        ],
        'a missing template with interpolate',
      );
      const schemaOnly = await send(acme.live, { to: 'ann@example.com', channel: 'email', content: 5 }, undefined, '/v1/send-raw');
      t.same(
        schemaOnly.body.error.issues.map((i: { path: string }) => i.path),
        ['content'],
        'content the schema refused is reported by the schema alone, not again as missing',
      );
      t.equal(await count(), before, 'no row written');

      // Braces are only a template when the body asks for interpolation.
      const literal = await send(acme.live, email({ content, interpolate: false }), undefined, '/v1/send-raw');
      t.equal(literal.status, 202, JSON.stringify(literal.body));
      t.match(await row(literal.body.id), { interpolate: 0, content: JSON.stringify(content) });
    });

    t.test('a template store that fails is not a body issue: its error is the answer', async (t) => {
      const { AppError } = await import('../../src/lib/errors.js');
      const store = d.app.templates;
      const resolve = store.resolveForSend;
      store.resolveForSend = async () => {
        throw new AppError('unavailable', 'the database is unavailable');
      };
      t.teardown(() => void (store.resolveForSend = resolve));
      const r = await send(acme.live, { template: 'welcome', to: 'ann@example.com' });
      t.equal(r.status, 503, JSON.stringify(r.body));
      t.equal(r.body.error.code, 'unavailable');
    });

    t.test('idempotency keys: their length, the original answer, nothing stored when refused', async (t) => {
      for (const key of ['', 'k'.repeat(256)]) {
        const r = await send(acme.live, email(), { 'idempotency-key': key });
        t.equal(r.status, 400, `length ${key.length}`);
        t.match(r.body.error, { code: 'invalid_request', message: 'Idempotency-Key must be 1-255 characters' });
      }
      t.equal((await send(acme.live, email(), { 'idempotency-key': 'k'.repeat(255) })).status, 202, '255 characters');
      t.equal((await send(acme.live, email(), { 'idempotency-key': 'k' })).status, 202, 'one character');

      const first = await send(acme.live, email({ scheduledAt: new Date(d.clock.now().getTime() + 60_000).toISOString() }), {
        'idempotency-key': 'order-7',
      });
      const before = await count();
      const again = await send(acme.live, { to: 'someone-else@example.com' }, { 'idempotency-key': 'order-7' });
      t.equal(again.status, 202, 'a repeat is answered before its body is looked at');
      t.same(again.body, first.body, 'with the original answer');
      t.equal(await count(), before, 'and no new message');
      const stored = await d.app.db.selectFrom('message_idempotency').selectAll().where('key', '=', 'order-7').executeTakeFirstOrThrow();
      t.match(stored, { workspace_id: acme.id, livemode: 1, message_id: (await row(first.body.id)).id });
      t.equal(stored.expires_at, new Date(d.clock.now().getTime() + 24 * 3600_000).toISOString(), 'kept 24 hours');
      t.same(JSON.parse(stored.response), first.body);

      const refused = await send(acme.live, { to: 'nope' }, { 'idempotency-key': 'order-8' });
      t.equal(refused.status, 422);
      t.notOk(
        await d.app.db.selectFrom('message_idempotency').select('key').where('key', '=', 'order-8').executeTakeFirst(),
        'a refused send keeps no key',
      );
      t.equal((await send(acme.live, email(), { 'idempotency-key': 'order-8' })).status, 202, 'so the key is still free');

      // A key lasts 24 hours to the millisecond: at 24 h it has expired.
      const edge = await send(acme.live, email(), { 'idempotency-key': 'edge' });
      d.clock.advance(24 * 3600_000);
      const after = await send(acme.live, email(), { 'idempotency-key': 'edge' });
      t.equal(after.status, 202);
      t.not(after.body.id, edge.body.id, 'at exactly 24 h the key is free again');

      // An expired key is taken over by the next send, which then owns it.
      d.clock.advance(48 * 3600_000);
      const reused = await send(acme.live, email(), { 'idempotency-key': 'order-7' });
      t.not(reused.body.id, first.body.id);
      const over = await d.app.db.selectFrom('message_idempotency').selectAll().where('key', '=', 'order-7').executeTakeFirstOrThrow();
      t.equal(over.message_id, (await row(reused.body.id)).id);
      t.same(JSON.parse(over.response), reused.body);
      t.equal(over.expires_at, new Date(d.clock.now().getTime() + 24 * 3600_000).toISOString());
      t.same((await send(acme.live, email(), { 'idempotency-key': 'order-7' })).body, reused.body, 'and answers its repeats');
    });

    t.test('the plan quota counts live sends per month, and only committed ones', async (t) => {
      const free = await d.workspace('free-ws');
      const usage = async () =>
        (await d.app.db.selectFrom('message_usage').selectAll().where('workspace_id', '=', free.id).execute()).map(
          (u) => `${u.month}:${u.count}`,
        );
      const month = d.clock.now().toISOString().slice(0, 7);
      t.equal((await send(free.live, email(), { 'idempotency-key': 'q1' })).status, 202);
      t.same(await usage(), [`${month}:1`]);
      t.equal((await send(free.live, email(), { 'idempotency-key': 'q1' })).status, 202, 'a repeat');
      t.same(await usage(), [`${month}:1`], 'is not counted again');
      t.equal((await send(free.test, email())).status, 202);
      t.same(await usage(), [`${month}:1`], 'test mode is not counted');
      t.equal((await send(free.live, email())).status, 202);
      const over = await send(free.live, email(), { 'idempotency-key': 'q3' });
      t.equal(over.status, 429);
      t.match(over.body.error, { code: 'quota_exceeded', message: "the free plan's quota of 2 messages per month is used up", limit: 2 });
      t.same(await usage(), [`${month}:2`]);
      t.notOk(await d.app.db.selectFrom('message_idempotency').select('key').where('key', '=', 'q3').executeTakeFirst(), 'no key kept');

      // A plan whose quota is 0 has none.
      const custom = await d.workspace('custom-ws', { plan: 'custom' });
      for (let i = 0; i < 3; i++) t.equal((await send(custom.live, email())).status, 202, `custom send ${i + 1}`);
      const counted = await d.app.db.selectFrom('message_usage').select(['month', 'count']).where('workspace_id', '=', custom.id).execute();
      t.same(counted, [{ month, count: 3 }], 'and still counts its live sends');

      // A plan this version does not know (written by a newer one, then downgraded) has no quota.
      const legacy = await d.workspace('legacy-ws');
      await d.app.db
        .updateTable('workspaces')
        .set({ plan: 'legacy' as 'free' })
        .where('id', '=', legacy.id)
        .execute();
      t.equal((await send(legacy.live, email())).status, 202, 'a send on an unknown plan');
    });

    t.test('the quota counts every shard of the month, and the overview sums them', async (t) => {
      // A count another node made in a shard of its own (while the plan had no quota), and one of
      // another month: the first counts against the quota, the second does not.
      const ws = await d.workspace('sharded-ws');
      const month = d.clock.now().toISOString().slice(0, 7);
      await d.app.db
        .insertInto('message_usage')
        .values([
          { workspace_id: ws.id, month, shard: 7, count: 1 },
          { workspace_id: ws.id, month: '2000-01', shard: 0, count: 5 },
        ])
        .execute();
      t.equal((await send(ws.live, email())).status, 202, 'one more fits the quota of 2');
      const over = await send(ws.live, email());
      t.equal(over.status, 429, 'the next does not: shard 7 holds one of the two');
      t.match(over.body.error, { code: 'quota_exceeded', limit: 2 });
      const dash = await dashboardLogin(d);
      await dash.select(ws.id, 'live');
      const overview = (await dash.request('GET', '/dashboard/api/overview')).body;
      t.same(overview.quota.messages, { used: 2, limit: 2 }, "the overview's usage is the shards' sum");
    });

    t.test('accept checks see the message, the plan and the schedule, and can refuse', async (t) => {
      const { AppError } = await import('../../src/lib/errors.js');
      const seen: unknown[] = [];
      d.app.outbound.addAcceptCheck(async ({ message, plan, scheduledAt }) => {
        seen.push({ to: message.recipient, plan, scheduledAt });
        if (message.recipient === 'refuse@example.com') throw new AppError('quota_exceeded', 'sender cap reached');
      });
      const at = new Date(d.clock.now().getTime() + 60_000).toISOString();
      t.equal((await send(acme.live, email({ scheduledAt: at }))).status, 202);
      const before = await count();
      const r = await send(acme.live, email({ to: 'refuse@example.com' }), { 'idempotency-key': 'chk' });
      t.equal(r.status, 429);
      t.same(seen, [
        { to: 'ann@example.com', plan: 'pro', scheduledAt: at },
        { to: 'refuse@example.com', plan: 'pro', scheduledAt: null },
      ]);
      t.equal(await count(), before, 'nothing written');
      t.notOk(await d.app.db.selectFrom('message_idempotency').select('key').where('key', '=', 'chk').executeTakeFirst());
    });
  });
}
