// Sending through the API on a booted daemon: validation, idempotency, templates, test outcomes,
// live transports (capture), retries, scheduling, cancel races, isolation, quotas.
import t from 'tap';
import { createCaptureTransport } from '../helpers/capture-transport.js';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

const email = (extra: Record<string, unknown> = {}) => ({
  to: 'ann@example.com',
  channel: 'email',
  content: { subject: 'Hi', text: 'Hello' },
  ...extra,
});
const dispatcher = (d: TestDaemon) => d.app.workers.find((w) => w.name === 'dispatcher')!;
const sub = JSON.stringify({ endpoint: 'https://push.example/abc', keys: { p256dh: 'BPk', auth: 'x1' } });

for (const db of testDatabases()) {
  t.test(`sending on ${db}`, async (t) => {
    const d = await bootDaemon(t, {
      db,
      env: { POSTERN_SCANNER_BLOCKED_PHRASES: 'wire the money', POSTERN_SCANNER_BLOCKED_DOMAINS: 'evil.test' },
    });
    const acme = await d.workspace('acme', { plan: 'pro' });
    const other = await d.workspace('other', { plan: 'pro' });
    const send = (key: string, body: unknown, headers?: Record<string, string>, path = '/v1/send') =>
      d.request('POST', path, { key, body, headers });
    const get = (key: string, id: string) => d.request('GET', `/v1/messages/${id}`, { key });

    t.test('every validation rule answers 422 invalid_body listing all issues', async (t) => {
      const cases: Array<[unknown, string[], string?]> = [
        [{ to: 'a@example.com' }, ['template'], 'neither template nor content'],
        [{ template: 'x', ...email() }, ['content'], 'both'],
        [{ to: 'a@example.com', content: { subject: 's', text: 't' } }, ['channel'], 'raw without channel'],
        [email({ to: 'not-an-address' }), ['to']],
        [{ to: '555-1234', channel: 'sms', content: { body: 'x' } }, ['to'], 'E.164'],
        [{ to: 'has space', channel: 'push', content: { body: 'x' } }, ['to']],
        [
          { to: '{"endpoint":"http://x.test/a","keys":{"p256dh":"a","auth":"b"}}', channel: 'web-push', content: { title: 'x' } },
          ['to'],
          'web-push https',
        ],
        [{ to: '{"endpoint":"https://x.test/a","keys":{}}', channel: 'web-push', content: { title: 'x' } }, ['to'], 'web-push keys'],
        [{ to: 'nojson', channel: 'web-push', content: { title: 'x' } }, ['to']],
        [email({ metadata: { a: { nested: 1 } } }), ['metadata.a']],
        [email({ scheduledAt: 'tomorrow' }), ['scheduledAt']],
        [email({ scheduledAt: new Date(d.clock.now().getTime() - 1000).toISOString() }), ['scheduledAt'], 'past'],
        [email({ scheduledAt: new Date(d.clock.now().getTime() + 31 * 86400_000).toISOString() }), ['scheduledAt'], 'beyond 30 days'],
        [email({ from: 'Ann <ann@example.com>' }), ['from'], 'from must be bare'],
        [email({ fromName: 'x'.repeat(129) }), ['fromName']],
        [email({ fromName: 'Evil <x>' }), ['fromName']],
        [email({ fromName: 'a\nb' }), ['fromName']],
        [
          {
            to: '+14155550100',
            channel: 'sms',
            content: { body: 'x' },
            cc: 'a@example.com',
            bcc: ['b@example.com'],
            replyTo: 'c@example.com',
            attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: 'aGk=' }],
            from: 'x@example.com',
            fromName: 'X',
          },
          ['from', 'fromName', 'cc', 'bcc', 'replyTo', 'attachments'],
          'email-only fields',
        ],
        [email({ attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: '%%%' }] }), ['attachments.0.content']],
        [email({ version: 0 }), ['version']],
        [email({ content: { text: 'no subject' } }), ['content.subject']],
        [email({ content: { subject: 'no body' } }), ['content.html']],
        [{ to: '+14155550100', channel: 'sms', content: { body: '' } }, ['content.body']],
        [email({ interpolate: true, content: { subject: '{{#a}}', text: 'x' } }), ['content.subject'], 'interpolated content must parse'],
        [
          { to: 'not-an-address', channel: 'email', cc: ['fine@example.com', 'bad'], content: { text: 'no subject' } },
          ['cc.1', 'to', 'content.subject'],
          'a bad cc hides neither a bad to nor a missing subject',
        ],
        [{ template: 'nope', to: 'x', cc: 'bad' }, ['cc', 'template'], 'a refused field leaves the template resolvable'],
        [email({ scheduled_at: '2030-01-01T00:00:00Z' }), ['scheduled_at'], 'a misspelt field is refused, not ignored'],
        [email({ metadata: JSON.parse('{"__proto__": "x"}') }), ['metadata.__proto__'], '__proto__ metadata key'],
        [email({ metadata: { constructor: 'x' } }), ['metadata.constructor'], 'constructor metadata key'],
      ];
      for (const [body, paths, name] of cases) {
        const r = await send(acme.live, body);
        t.equal(r.status, 422, name ?? JSON.stringify(body));
        t.equal(r.body.error?.code, 'invalid_body');
        const got = r.body.error.issues.map((i: { path: string }) => i.path);
        for (const p of paths) t.ok(got.includes(p), `${name ?? p}: issue at ${p} in ${JSON.stringify(got)}`);
      }
      const misspelt = await send(acme.live, email({ scheduled_at: '2030-01-01T00:00:00Z' }));
      t.match(misspelt.body.error.issues, [{ path: 'scheduled_at', message: 'unknown field; did you mean scheduledAt?' }]);
      t.equal((await d.request('GET', '/v1/messages', { key: acme.live })).body.data.length, 0, 'nothing was sent');
      const notObject = await send(acme.live, [email()]);
      t.match(notObject, { status: 422, body: { error: { code: 'invalid_body', issues: [{ path: '', message: /JSON object/ }] } } });
      const many = await send(acme.live, {
        to: 'x',
        channel: 'email',
        content: { subject: 's', text: 't' },
        fromName: 'a<b',
        replyTo: 'nope',
        scheduledAt: '2000-01-01T00:00:00Z',
      });
      t.same(
        many.body.error.issues.map((i: { path: string }) => i.path).sort(),
        ['fromName', 'replyTo', 'scheduledAt', 'to'].sort(),
        'shape issues listed together with those of the fields that parsed',
      );
      const raw = await send(acme.live, { template: 'welcome', to: 'a@example.com' }, undefined, '/v1/send-raw');
      t.equal(raw.status, 422);
      t.ok(
        raw.body.error.issues.some((i: { path: string }) => i.path === 'template'),
        'send-raw refuses template',
      );
      const list = await d.request('GET', '/v1/messages', { key: acme.live });
      t.equal(list.body.data.length, 0, 'nothing was stored');
    });

    t.test('a valid raw send is committed before the 202 and completes in test mode', async (t) => {
      const r = await send(
        acme.test,
        email({ metadata: { order: 123, vip: true, tag: 'x' }, cc: 'c@example.com', fromName: 'Ann Co', from: 'ann@acme.test' }),
        undefined,
        '/v1/send-raw',
      );
      t.equal(r.status, 202);
      t.match(r.body, { id: /^msg_[0-9A-Za-z]{22}$/, status: 'queued', livemode: false });
      await dispatcher(d).tick();
      const m = (await get(acme.test, r.body.id)).body;
      t.match(m, {
        publicId: r.body.id,
        status: 'delivered',
        channel: 'email',
        livemode: false,
        templateSlug: null,
        metadata: { order: 123, vip: true },
        fromOverride: 'ann@acme.test',
        fromNameOverride: 'Ann Co',
        interpolate: false,
        pinnedVersion: null,
        provider: 'test',
        idempotencyKey: null,
        scheduledAt: null,
      });
      t.same(
        m.timeline.map((e: { e: string }) => e.e),
        ['accepted', 'rendered', 'dispatched', 'delivered'],
      );
      t.notOk('cc' in m, 'internal fields stay internal');
    });

    t.test('test recipients simulate outcomes on every channel', async (t) => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [email({ to: 'failed@example.com' }), 'failed'],
        [email({ to: 'suppressed+1@example.com' }), 'suppressed'],
        [email({ to: 'blocked@example.com' }), 'blocked'],
        [email({ to: 'opted_out@example.com' }), 'opted_out'],
        [email({ to: 'sent@example.com' }), 'sent'],
        [{ to: '+15005550001', channel: 'sms', content: { body: 'x' } }, 'failed'],
        [{ to: '+15005550002', channel: 'sms', content: { body: 'x' } }, 'suppressed'],
        [{ to: '+14155550100', channel: 'sms', content: { body: 'x' } }, 'delivered'],
        [{ to: 'test-blocked', channel: 'push', content: { body: 'x' } }, 'blocked'],
        [{ to: 'device-token-1', channel: 'push', content: { body: 'x' } }, 'delivered'],
        [
          {
            to: JSON.stringify({ endpoint: 'https://push.example/opted_out', keys: { p256dh: 'a', auth: 'b' } }),
            channel: 'web-push',
            content: { title: 'x' },
          },
          'opted_out',
        ],
        [{ to: sub, channel: 'web-push', content: { title: 'x' } }, 'delivered'],
      ];
      const ids: string[] = [];
      for (const [body] of cases) ids.push((await send(acme.test, body)).body.id);
      await dispatcher(d).tick();
      for (let i = 0; i < cases.length; i++) {
        const m = (await get(acme.test, ids[i])).body;
        t.equal(m.status, cases[i][1], `${String(cases[i][0].to)} → ${cases[i][1]}`);
        if (m.status === 'blocked') {
          t.equal(m.timeline.at(-1).e, 'blocked: automated content safety checks blocked this message');
          t.equal(m.error, null, 'no reason in the API');
        }
      }
      // deferred then delivered, with the retry schedule and the injected clock
      const def = (await send(acme.test, email({ to: 'deferred@example.com' }))).body.id;
      await dispatcher(d).tick();
      let m = (await get(acme.test, def)).body;
      t.equal(m.status, 'dispatched');
      t.equal(m.timeline.at(-1).e, 'deferred');
      d.clock.advance(59_000);
      await dispatcher(d).tick();
      t.equal((await get(acme.test, def)).body.status, 'dispatched', 'not before the first retry delay');
      d.clock.advance(2_000);
      await dispatcher(d).tick();
      m = (await get(acme.test, def)).body;
      t.equal(m.status, 'delivered');
    });

    t.test('events are recorded for outcomes in the same transaction', async (t) => {
      const rows = await d.app.db.selectFrom('events').select(['type', 'data']).where('workspace_id', '=', acme.id).execute();
      const types = new Set(rows.map((r) => r.type));
      for (const ty of [
        'message.delivered',
        'message.failed',
        'message.suppressed',
        'message.blocked',
        'message.opted_out',
        'message.sent',
      ])
        t.ok(types.has(ty as never), ty);
      const blocked = rows.find((r) => r.type === 'message.blocked')!;
      t.match(JSON.parse(blocked.data), { status: 'blocked', publicId: /^msg_/ });
    });

    t.test('the content scanner blocks configured phrases and domains; the reason goes to the log only', async (t) => {
      const a = (await send(acme.test, email({ content: { subject: 'Hi', text: 'Please WIRE THE MONEY today' } }))).body.id;
      const b = (await send(acme.test, email({ content: { subject: 'Hi', html: '<a href="https://login.evil.test/x">go</a>' } }))).body.id;
      const c = (await send(acme.test, email({ content: { subject: 'Hi', text: 'see https://good.test' } }))).body.id;
      await dispatcher(d).tick();
      t.equal((await get(acme.test, a)).body.status, 'blocked');
      t.equal((await get(acme.test, b)).body.status, 'blocked');
      t.equal((await get(acme.test, c)).body.status, 'delivered');
      t.ok(
        d.logs.some((l) => l.includes(a) && l.includes('blocked phrase')),
        'the operator log has the real reason',
      );
      t.notMatch(JSON.stringify((await get(acme.test, b)).body), /evil/);
    });

    t.test('live: no transport fails clearly; a registered transport gets the rendered delivery', async (t) => {
      const none = (await send(acme.live, { to: '+14155550100', channel: 'sms', content: { body: 'x' } })).body.id;
      await dispatcher(d).tick();
      t.match((await get(acme.live, none)).body, { status: 'failed', error: /no transport is configured for the sms channel/ });

      const cap = createCaptureTransport();
      d.app.outbound.registerTransport('email', cap);
      const r = await send(
        acme.live,
        email({
          content: { subject: 'Hi {{name}}', text: 'Yo {{name}}' },
          interpolate: true,
          vars: { name: 'Ann' },
          replyTo: 'r@example.com',
          bcc: ['b@example.com'],
          attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: 'aGk=' }],
        }),
      );
      await dispatcher(d).tick();
      t.equal(cap.deliveries.length, 1);
      t.match(cap.deliveries[0], {
        message: {
          publicId: r.body.id,
          livemode: true,
          replyTo: 'r@example.com',
          bcc: ['b@example.com'],
          attachments: [{ filename: 'a.txt' }],
          attempt: 1,
        },
        content: { subject: 'Hi Ann', text: 'Yo Ann' },
      });
      t.match((await get(acme.live, r.body.id)).body, { status: 'delivered', provider: 'capture', interpolate: true });

      // Without interpolate the content is used verbatim.
      await send(acme.live, email({ content: { subject: 'Hi {{name}}', text: 'x' } }));
      await dispatcher(d).tick();
      t.equal((cap.deliveries[1].content as { subject: string }).subject, 'Hi {{name}}');

      // A transport that keeps deferring: retries per schedule until maxAgeHours, then failed.
      cap.fallback = () => ({ kind: 'deferred', provider: 'capture', error: '451 try later' });
      const def = (await send(acme.live, email())).body.id;
      await dispatcher(d).tick();
      for (let i = 0; i < 60; i++) {
        d.clock.advance(4 * 3600_000);
        await dispatcher(d).tick();
        if ((await get(acme.live, def)).body.status !== 'dispatched') break;
      }
      const m = (await get(acme.live, def)).body;
      t.match(m, { status: 'failed', error: /retries expired: 451 try later/ });
      t.ok(m.timeline.filter((e: { e: string }) => e.e === 'deferred').length >= 10);
      cap.fallback = () => ({ kind: 'sent', provider: 'capture', providerMessageId: 'pm-1' });
      const sent = (await send(acme.live, email())).body.id;
      await dispatcher(d).tick();
      t.match((await get(acme.live, sent)).body, { status: 'sent', providerMessageId: 'pm-1' });
    });

    t.test('template sends: channel inferred, version pinned or resolved by environment', async (t) => {
      t.equal(
        (await d.request('POST', '/v1/templates', { key: acme.live, body: { slug: 'welcome', channel: 'email', description: 'hi' } }))
          .status < 300,
        true,
      );
      const draft = (subject: string) =>
        d.request('PUT', '/v1/templates/welcome/draft', {
          key: acme.live,
          body: { content: { subject, text: 'Hello {{name}}' }, variables: [] },
        });
      t.ok((await draft('Welcome v1 {{name}}')).status < 300);
      t.ok((await d.request('POST', '/v1/templates/welcome/publish', { key: acme.live })).status < 300);
      t.ok((await draft('Welcome v2 {{name}}')).status < 300);
      const cap = createCaptureTransport();
      d.app.outbound.registerTransport('email', cap);
      const live = await send(acme.live, { template: 'WELCOME', to: 'a@example.com', vars: { name: 'Ann' } });
      t.equal(live.status, 202, JSON.stringify(live.body));
      const pinned = await send(acme.live, { template: 'welcome', to: 'a@example.com', version: 1 });
      await dispatcher(d).tick();
      // One tick delivers both, in either order.
      const liveDelivery = cap.deliveries.find((c) => c.message.publicId === live.body.id);
      t.equal((liveDelivery?.content as { subject: string }).subject, 'Welcome v1 Ann', 'live uses the published version');
      t.match((await get(acme.live, live.body.id)).body, { templateSlug: 'welcome', pinnedVersion: null, interpolate: false });
      t.match((await get(acme.live, pinned.body.id)).body, { pinnedVersion: 1 });
      const test = await send(acme.test, { template: 'welcome', to: 'a@example.com', vars: { name: 'Bo' } });
      t.equal(test.status, 202);
      const missing = await send(acme.live, { template: 'welcome', to: 'a@example.com', version: 9 });
      t.equal(missing.status, 422);
      t.ok(missing.body.error.issues.some((i: { path: string }) => i.path === 'version'));
      const nope = await send(acme.live, { template: 'nope', to: 'x' });
      t.equal(nope.status, 422);
      t.ok(nope.body.error.issues.some((i: { path: string }) => i.path === 'template'));
      const wrongTo = await send(acme.live, { template: 'welcome', to: '+14155550100' });
      t.ok(
        wrongTo.body.error.issues.some((i: { path: string }) => i.path === 'to'),
        'to is checked against the template channel',
      );
      const mix = await send(acme.live, { template: 'welcome', to: 'a@example.com', interpolate: true });
      t.ok(mix.body.error.issues.some((i: { path: string }) => i.path === 'interpolate'));
    });

    t.test('idempotency: concurrent repeats get one message; keys are per environment; expire after 24 h', async (t) => {
      const h = { 'idempotency-key': 'order-42' };
      const rs = await Promise.all(Array.from({ length: 10 }, () => send(acme.test, email({ to: 'idem@example.com' }), h)));
      const ids = new Set(rs.map((r) => r.body.id));
      t.equal(ids.size, 1, 'one id for ten concurrent requests');
      t.ok(rs.every((r) => r.status === 202));
      const n = await d.app.db.selectFrom('messages').select('id').where('recipient', '=', 'idem@example.com').execute();
      t.equal(n.length, 1, 'one row');
      t.equal((await get(acme.test, rs[0].body.id)).body.idempotencyKey, 'order-42');
      const live = await send(acme.live, email({ to: 'idem@example.com' }), h);
      t.not(live.body.id, rs[0].body.id, 'another environment has its own keys');
      const oth = await send(other.test, email({ to: 'idem@example.com' }), h);
      t.not(oth.body.id, rs[0].body.id, 'another workspace has its own keys');
      d.clock.advance(24 * 3600_000 + 1000);
      const later = await send(acme.test, email({ to: 'idem@example.com' }), h);
      t.not(later.body.id, rs[0].body.id, 'an expired key creates a new message');
      t.equal((await send(acme.test, email(), h)).body.id, later.body.id);
    });

    t.test('scheduling with the injected clock, and cancel', async (t) => {
      const at = new Date(d.clock.now().getTime() + 3600_000).toISOString();
      const r = await send(acme.test, email({ scheduledAt: at }));
      t.match(r.body, { status: 'scheduled' });
      await dispatcher(d).tick();
      t.match((await get(acme.test, r.body.id)).body, { status: 'scheduled', scheduledAt: at });
      d.clock.advance(3600_000);
      await dispatcher(d).tick();
      const m = (await get(acme.test, r.body.id)).body;
      t.equal(m.status, 'delivered');
      t.same(
        m.timeline.map((e: { e: string }) => e.e),
        ['accepted', 'scheduled', 'queued', 'rendered', 'dispatched', 'delivered'],
      );

      const s = await send(acme.test, email({ scheduledAt: new Date(d.clock.now().getTime() + 60_000).toISOString() }));
      t.equal((await d.request('DELETE', `/v1/messages/${s.body.id}`, { key: other.test })).status, 404, 'another workspace cannot cancel');
      t.equal(
        (await d.request('DELETE', `/v1/messages/${s.body.id}`, { key: acme.live })).status,
        404,
        'another environment cannot cancel',
      );
      const c = await d.request('DELETE', `/v1/messages/${s.body.id}`, { key: acme.test });
      t.same(c.body, { id: s.body.id, status: 'canceled' });
      d.clock.advance(120_000);
      await dispatcher(d).tick();
      t.equal((await get(acme.test, s.body.id)).body.status, 'canceled', 'never dispatched');
      const again = await d.request('DELETE', `/v1/messages/${s.body.id}`, { key: acme.test });
      t.equal(again.status, 409);
      t.match(again.body.error, { code: 'not_cancelable', status: 'canceled' });
      const done = await d.request('DELETE', `/v1/messages/${r.body.id}`, { key: acme.test });
      t.match(done.body.error, { code: 'not_cancelable', status: 'delivered' });
    });

    t.test('cancel races: queued, claimed, and dispatched while in flight', async (t) => {
      const w = dispatcher(d);
      await w.stop(); // no automatic passes: this test drives the dispatcher by hand
      t.teardown(() => w.start());
      const cap = createCaptureTransport();
      d.app.outbound.registerTransport('email', cap);

      // Queued: cancel wins, the dispatcher never hands it over.
      const q = (await send(acme.live, email())).body.id;
      t.equal((await d.request('DELETE', `/v1/messages/${q}`, { key: acme.live })).status, 200);
      await w.tick();
      t.equal(cap.deliveries.length, 0);

      // Dispatched and in flight: 409 with the observed status.
      cap.hold();
      const f = (await send(acme.live, email())).body.id;
      const pass = w.tick();
      await cap.waitFor(1);
      const c = await d.request('DELETE', `/v1/messages/${f}`, { key: acme.live });
      t.equal(c.status, 409);
      t.match(c.body.error, { code: 'not_cancelable', status: 'dispatched' });
      cap.release();
      await pass;
      t.equal((await get(acme.live, f)).body.status, 'delivered');

      // Races in flight: many cancels against a dispatcher pass; each cancel either wins (and the
      // message is never handed over) or loses with 409 carrying the status it saw.
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push((await send(acme.live, email())).body.id);
      const before = cap.deliveries.length;
      const [, ...cancels] = await Promise.all([
        w.tick(),
        ...ids.map((id) => d.request('DELETE', `/v1/messages/${id}`, { key: acme.live })),
      ]);
      await w.tick();
      const delivered = new Set(cap.deliveries.slice(before).map((x) => x.message.publicId));
      for (let i = 0; i < ids.length; i++) {
        const m = (await get(acme.live, ids[i])).body;
        if (cancels[i].status === 200) {
          t.equal(m.status, 'canceled');
          t.notOk(delivered.has(ids[i]), 'a canceled message is never handed over');
        } else {
          t.equal(cancels[i].status, 409);
          t.not(cancels[i].body.error.status, 'queued');
          t.ok(delivered.has(ids[i]));
        }
      }
    });

    t.test('isolation across workspaces and environments', async (t) => {
      const r = await send(acme.live, email());
      t.equal((await get(other.live, r.body.id)).status, 404);
      t.equal((await get(acme.test, r.body.id)).status, 404);
      t.equal((await get(acme.live, r.body.id)).status, 200);
      const ol = await d.request('GET', '/v1/messages?limit=200', { key: other.live });
      t.notOk(ol.body.data.some((m: { publicId: string }) => m.publicId === r.body.id));
      t.equal((await get(acme.live, 'msg_nope')).status, 404);
    });

    t.test('scopes: send, read and cancel', async (t) => {
      const readOnly = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'test', '--scopes', 'read');
      const r = await send(readOnly.json.secret, email());
      t.equal(r.status, 403);
      t.equal(r.body.error.code, 'insufficient_scope');
      const sendOnly = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'test', '--scopes', 'send');
      t.equal((await d.request('GET', '/v1/messages', { key: sendOnly.json.secret })).status, 403);
      t.equal((await d.request('DELETE', '/v1/messages/msg_x', { key: sendOnly.json.secret })).status, 403);
    });
  });
}

t.test('plan quota: 429 quota_exceeded once the month is used up', async (t) => {
  const d = await bootDaemon(t, { env: { POSTERN_PLANS_FREE_MESSAGES_PER_MONTH: '3' } });
  const ws = await d.workspace('tiny');
  for (let i = 0; i < 3; i++) t.equal((await d.request('POST', '/v1/send', { key: ws.live, body: email() })).status, 202);
  const over = await d.request('POST', '/v1/send', { key: ws.live, body: email() });
  t.equal(over.status, 429);
  t.match(over.body.error, { code: 'quota_exceeded', limit: 3 });
  t.equal((await d.request('POST', '/v1/send', { key: ws.test, body: email() })).status, 202, 'test mode does not count');
  d.clock.advance(32 * 86400_000);
  t.equal((await d.request('POST', '/v1/send', { key: ws.live, body: email() })).status, 202, 'a new month starts afresh');
});

t.test('accept checks and hold checks plug in', async (t) => {
  const d = await bootDaemon(t);
  const ws = await d.workspace('hooks');
  const { AppError } = await import('../../src/lib/errors.js');
  d.app.outbound.addAcceptCheck(async ({ message }) => {
    if (message.recipient === 'capped@example.com') throw new AppError('quota_exceeded', 'sender cap reached');
  });
  d.app.outbound.addHoldCheck(async (m) =>
    m.recipient === 'held@example.com' ? { kind: 'suppressed', reason: 'on the suppression list' } : null,
  );
  const capped = await d.request('POST', '/v1/send', { key: ws.test, body: email({ to: 'capped@example.com' }) });
  t.equal(capped.status, 429);
  const held = await d.request('POST', '/v1/send', { key: ws.test, body: email({ to: 'held@example.com' }) });
  await dispatcher(d).tick();
  t.match((await d.request('GET', `/v1/messages/${held.body.id}`, { key: ws.test })).body, {
    status: 'suppressed',
    error: 'on the suppression list',
  });
});
