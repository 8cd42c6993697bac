// End to end through the API and the dispatcher: send-raw → delivered to a loopback MX; a 4xx then
// success on retry (ManualClock); a DSN, delivered over SMTP to the return path as a remote MTA
// would, that turns the delivered message failed and suppresses the address; a later send held as suppressed; tracking (first open/first click); one-click
// unsubscribe; sender caps; the suppressions API and CLI.
import t from 'tap';
import { simpleParser } from 'mailparser';
import {} from '../../src/suppressions/store.js';
import { createSuppressionCheck } from '../../src/outbound/suppression-hooks.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { sendRaw } from '../helpers/inbound.js';
import { buildDsn } from '../helpers/reports.js';
import { emailTransport, makeDelivery, startRemoteMx } from '../helpers/smtp-sink.js';

const tick = async (d: { app: { workers: { name: string; tick(): Promise<void> }[] } }) =>
  d.app.workers.find((w) => w.name === 'dispatcher')!.tick();

for (const db of testDatabases()) {
  t.test(`email through the API on ${db}`, async (t) => {
    let rcptRule: (a: string) => { code: number; message: string } | undefined = () => undefined;
    const { sink, env } = await startRemoteMx(t, { rcpt: (a) => rcptRule(a) });
    const d = await bootDaemon(t, {
      db,
      env: {
        ...env,
        POSTERN_PLANS_FREE_SENDER_CAPS_SHARED_DAY: '2',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const send = (to: string, html = '<p>Hello <a href="https://example.org/welcome?x=1">welcome</a></p>', key = ws.live) =>
      d.request('POST', '/v1/send-raw', { key, body: { to, channel: 'email', content: { subject: 'Hi', html, text: 'Hello' } } });
    const get = async (id: string) => (await d.request('GET', `/v1/messages/${id}`, { key: ws.live })).body;

    t.test('delivered, then a DSN fails it and suppresses the address; the next send is suppressed', async (t) => {
      const r = await send('alice@example.net');
      t.equal(r.status, 202);
      await tick(d);
      let m = await get(r.body.id);
      t.match(m, { status: 'delivered', provider: 'smtp-direct', providerMessageId: `<${r.body.id}@mx.postern.test>` });
      t.ok(
        m.timeline.some((e: { e: string }) => /^to alice@example\.net: delivered/.test(e.e)),
        'per-recipient note on the timeline',
      );
      t.equal(sink.received.at(-1)!.from, `bounces+${r.body.id}@bounces.mx.postern.test`);

      // The remote MTA bounces it later: a DSN over SMTP to the return path it was given.
      const returnPath = sink.received.at(-1)!.from;
      const dsn = await buildDsn(returnPath, [
        { recipient: 'alice@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' },
      ]);
      t.match(await sendRaw(d.smtpPort, { from: '', to: [returnPath] }, dsn), /^250 /);
      m = await get(r.body.id);
      t.match(m, { status: 'failed', error: 'bounced: alice@example.net 5.1.1 550 5.1.1 user unknown' });
      const events = await d.app.db.selectFrom('events').select(['type']).where('type', '=', 'message.failed').execute();
      t.equal(events.length, 1, 'message.failed recorded');
      const list = await d.request('GET', '/v1/suppressions', { key: ws.live });
      t.match(list.body.data, [{ address: 'alice@example.net', reason: 'bounce', messageId: r.body.id }]);

      const before = sink.received.length;
      const again = await send('alice@example.net');
      await tick(d);
      t.match(await get(again.body.id), { status: 'suppressed' });
      t.equal(sink.received.length, before, 'no connection for a suppressed address');

      const del = await d.request('DELETE', '/v1/suppressions/alice@example.net', { key: ws.live });
      t.same(del.body, { address: 'alice@example.net', deleted: true });
      t.equal((await d.request('DELETE', '/v1/suppressions/alice@example.net', { key: ws.live })).status, 404);
    });

    t.test('a 4xx defers; the retry after the backoff delivers', async (t) => {
      rcptRule = () => ({ code: 451, message: '4.7.1 greylisted' });
      const r = await send('grey@example.net');
      await tick(d);
      let m = await get(r.body.id);
      t.match(m, { status: 'dispatched', error: /451 4\.7\.1 greylisted/ });
      t.ok(m.timeline.some((e: { e: string }) => e.e === 'deferred'));
      rcptRule = () => undefined;
      d.clock.advance(61_000);
      await tick(d);
      m = await get(r.body.id);
      t.equal(m.status, 'delivered');
    });

    t.test('a 5xx fails the message', async (t) => {
      rcptRule = () => ({ code: 550, message: '5.1.1 no such mailbox' });
      const r = await send('nobody@example.net');
      await tick(d);
      t.match(await get(r.body.id), { status: 'failed', error: /550 5\.1\.1 no such mailbox/ });
      rcptRule = () => undefined;
    });

    t.test('tracking: first open and first click only; the redirect goes to the signed link', async (t) => {
      t.match((await d.cli('tracking', 'enable', '--workspace', 'acme')).json, { tracking: true });
      const seen: unknown[] = [];
      const off = d.app.bus.subscribe('events.recorded', (p) => p.type === 'message.clicked' && seen.push(p));
      t.teardown(off);
      const r = await send('track@example.net');
      await tick(d);
      const html = String((await simpleParser(sink.received.at(-1)!.raw)).html);
      const pixel = /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1];
      const click = /href="([^"]+\/t\/c\/[^"]+)"/.exec(html)![1].replace(/&amp;/g, '&');
      t.match(pixel, d.url);
      const p1 = await fetch(pixel);
      t.equal(p1.headers.get('content-type'), 'image/gif');
      const openedAt = (await get(r.body.id)).openedAt;
      t.ok(openedAt);
      d.clock.advance(5_000);
      await fetch(pixel);
      t.equal((await get(r.body.id)).openedAt, openedAt, 'a later open does not change openedAt');

      const c1 = await fetch(click, { redirect: 'manual' });
      t.equal(c1.status, 302);
      t.equal(c1.headers.get('location'), 'https://example.org/welcome?x=1');
      const clickedAt = (await get(r.body.id)).clickedAt;
      d.clock.advance(5_000);
      await fetch(click, { redirect: 'manual' });
      const m = await get(r.body.id);
      t.equal(m.clickedAt, clickedAt);
      t.equal(m.status, 'delivered', 'engagement never changes status');
      t.equal(m.timeline.filter((e: { e: string }) => e.e === 'opened').length, 1);
      const evs = await d.app.db
        .selectFrom('events')
        .select(['type', 'data'])
        .where('type', 'in', ['message.opened', 'message.clicked'])
        .execute();
      t.same(evs.map((e) => e.type).sort(), ['message.clicked', 'message.opened']);
      t.equal(JSON.parse(evs.find((e) => e.type === 'message.clicked')!.data).link, 'https://example.org/welcome?x=1');
      t.equal(seen.length, 1, 'message.clicked announced on the bus once');

      // Forge as an attacker would: the genuine payload with another link, under signatures that are
      // not the MAC of that payload (the genuine one, a cut one, none); and the genuine payload
      // under a tampered signature.
      const [body, sig] = click.split('/t/c/')[1].split('.');
      const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      t.same(payload, { k: 'click', m: r.body.id, u: 'https://example.org/welcome?x=1' }, 'the token signs the message and the exact link');
      const forged = Buffer.from(JSON.stringify({ ...payload, u: 'https://evil.example/' })).toString('base64url');
      const tampered = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
      for (const token of [`${forged}.${sig}`, `${forged}.${sig.slice(0, 4)}`, `${forged}.`, forged, `${body}.${tampered}`]) {
        const res = await fetch(`${d.url}/t/c/${token}`, { redirect: 'manual' });
        t.equal(res.status, 404, `refused: ${token.slice(-30)}`);
        t.equal(res.headers.get('location'), null);
      }
      t.equal((await fetch(click, { redirect: 'manual' })).status, 302, 'the genuine token still redirects');
      await d.cli('tracking', 'disable', '--workspace', 'acme');
    });

    t.test('one-click unsubscribe opts the recipient out of template sends', async (t) => {
      const app = d.app;
      const transport = emailTransport(t, app, { suppressions: app.suppressions });
      const dl = makeDelivery(app, ws.id, { recipient: 'reader@example.net', templateSlug: 'newsletter' });
      t.equal((await transport.deliver(dl)).kind, 'delivered');
      const head = sink.received
        .at(-1)!
        .raw.toString()
        .split(/\r\n\r\n/)[0]
        .replace(/\r\n[ \t]+/g, '');
      t.match(head, /^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
      const url = /^List-Unsubscribe:\s*<([^>]+)>$/m.exec(head)![1];
      t.match(url, `${d.url}/u/`);
      const page = await fetch(url);
      t.equal(page.status, 200, 'GET shows a confirmation page and changes nothing');
      t.equal(await app.suppressions.get({ workspaceId: ws.id, livemode: true }, 'reader@example.net'), null);
      const post = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'List-Unsubscribe=One-Click',
      });
      t.equal(post.status, 200);
      t.match(await app.suppressions.get({ workspaceId: ws.id, livemode: true }, 'reader@example.net'), { reason: 'unsubscribe' });
      const check = createSuppressionCheck(app.suppressions);
      t.match(await check({ ...dl.message }), { kind: 'opted_out' });
      t.equal(await check({ ...dl.message, templateSlug: null }), null, 'raw (transactional) sends still go out');
    });

    t.test('suppressions API and CLI', async (t) => {
      const add = await d.request('POST', '/v1/suppressions', { key: ws.live, body: { address: 'Manual@Example.net' } });
      t.equal(add.status, 201);
      t.match(add.body, { address: 'manual@example.net', reason: 'manual', createdAt: /T/ });
      t.equal((await d.request('POST', '/v1/suppressions', { key: ws.live, body: { address: 'nope' } })).status, 422);
      const cli = await d.cli('suppression', 'list', '--workspace', 'acme');
      t.ok(cli.json.some((s: { address: string }) => s.address === 'manual@example.net'));
      t.match((await d.cli('suppression', 'remove', '--workspace', 'acme', 'manual@example.net')).json, { deleted: true });
    });

    t.test('shared sender caps refuse over-cap sends with 429 quota_exceeded', async (t) => {
      const free = await d.workspace('freebie', { plan: 'free' });
      t.equal((await send('a@example.net', '<p>x</p>', free.live)).status, 202);
      t.equal((await send('b@example.net', '<p>x</p>', free.live)).status, 202);
      const over = await send('c@example.net', '<p>x</p>', free.live);
      t.equal(over.status, 429);
      t.match(over.body.error, { code: 'quota_exceeded', limit: 2 });
      t.equal((await send('c@example.net', '<p>x</p>', free.test)).status, 202, 'test mode is not capped');
      await tick(d);
    });
  });
}
