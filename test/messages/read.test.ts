// GET /v1/messages: paging under inserts, every filter, search escaping, and the SSE tail.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { openTail } from '../helpers/tail.js';

const email = (to: string, metadata: Record<string, unknown> = {}) => ({
  to,
  channel: 'email',
  metadata,
  content: { subject: 's', text: 't' },
});

for (const db of testDatabases()) {
  t.test(`listing on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const acme = await d.workspace('acme', { plan: 'custom' });
    const other = await d.workspace('other', { plan: 'custom' });
    const send = (key: string, body: unknown) => d.request('POST', '/v1/send', { key, body });
    const list = (key: string, qs: string) => d.request('GET', `/v1/messages${qs}`, { key });

    t.test('newest first, cursor paging stable under inserts between pages', async (t) => {
      const ids: string[] = [];
      for (let i = 0; i < 25; i++) ids.push((await send(acme.test, email(`p${i}@example.com`))).body.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      let page = 0;
      do {
        const r = await list(acme.test, `?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
        t.equal(r.status, 200);
        seen.push(...r.body.data.map((m: { publicId: string }) => m.publicId));
        cursor = r.body.nextCursor;
        // Inserts between pages must neither repeat nor hide anything older than the cursor.
        await send(acme.test, email(`late${page}@example.com`));
        page++;
      } while (cursor && page < 20);
      t.same(seen, [...ids].reverse(), 'every message once, newest first');
      const first = await list(acme.test, '?limit=3');
      t.equal(first.body.data[0].recipient, `late${page - 1}@example.com`, 'a new message shows on a fresh first page');
      t.equal((await list(acme.test, '?cursor=garbage')).status, 400);
      for (const bad of ['?limit=0', '?limit=201', '?limit=abc', '?status=bogus', '?channel=fax', `?q=${'x'.repeat(513)}`, '?tail=2']) {
        const r = await list(acme.test, bad);
        t.equal(r.status, 400, bad);
        t.equal(r.body.error.code, 'invalid_request');
      }
      t.equal((await list(acme.test, '?limit=200')).body.data.length, 25 + page);
    });

    t.test('filters: status, template, channel, metadata (string forms), composable with cursor', async (t) => {
      await send(acme.live, email('m1@example.com', { order: 123, vip: true, region: 'eu' }));
      await send(acme.live, email('m2@example.com', { order: '123', vip: 'true', region: 'us' }));
      await send(acme.live, email('m3@example.com', { order: 1234, region: 'eu' }));
      await send(acme.live, { to: '+14155550100', channel: 'sms', content: { body: 'x' }, metadata: { region: 'eu' } });
      const recips = (r: { body: { data: Array<{ recipient: string }> } }) => r.body.data.map((m) => m.recipient).sort();
      t.same(
        recips(await list(acme.live, '?metadata[order]=123')),
        ['m1@example.com', 'm2@example.com'],
        '123 matches 123 and "123", not 1234',
      );
      t.same(recips(await list(acme.live, '?metadata[vip]=true')), ['m1@example.com', 'm2@example.com']);
      t.same(recips(await list(acme.live, '?metadata[order]=123&metadata[region]=eu')), ['m1@example.com'], 'AND-ed');
      t.same(recips(await list(acme.live, '?channel=sms')), ['+14155550100']);
      t.same(recips(await list(acme.live, '?channel=email&metadata[region]=eu')), ['m1@example.com', 'm3@example.com']);
      const p1 = await list(acme.live, '?metadata[region]=eu&limit=1');
      t.equal(p1.body.data.length, 1);
      const p2 = await list(acme.live, `?metadata[region]=eu&limit=5&cursor=${p1.body.nextCursor}`);
      t.equal(p2.body.data.length, 2, 'filter composes with cursor');
      t.equal(p2.body.nextCursor, null);
      // Live messages have no transport here: they fail. Status filter sees that.
      await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
      // Live, with nothing real to deliver to: the sms has no provider connection (failed) and the
      // test zone has no example.com (NXDOMAIN: suppressed, never attempted).
      t.equal((await list(acme.live, '?status=failed')).body.data.length, 1);
      t.equal((await list(acme.live, '?status=suppressed')).body.data.length, 3);
      t.equal((await list(acme.live, '?status=queued')).body.data.length, 0);
      t.equal((await list(other.live, '?metadata[region]=eu')).body.data.length, 0, 'other workspace sees none');
      t.equal((await list(acme.test, '?metadata[region]=eu')).body.data.length, 0, 'other environment sees none');
      await d.request('POST', '/v1/templates', { key: acme.test, body: { slug: 'promo', channel: 'sms', description: '' } });
      await d.request('PUT', '/v1/templates/promo/draft', { key: acme.test, body: { content: { body: 'hi' }, variables: [] } });
      const ts = await send(acme.test, { template: 'promo', to: '+14155550111' });
      t.equal(ts.status, 202, JSON.stringify(ts.body));
      t.same(recips(await list(acme.test, '?template=promo')), ['+14155550111']);
    });

    t.test('q: case-insensitive substring over id, recipient, slug and metadata; % _ \\ literal', async (t) => {
      const a = (await send(acme.live, email('Literal_Under@Example.com', { note: '100%' }))).body.id;
      await send(acme.live, email('literalXunder@example.com', { note: '1000' }));
      await send(acme.live, email('back@example.com', { path: 'a\\b' }));
      await send(acme.live, email('plain@example.com', { campaignKey: 'spring' }));
      const q = async (s: string) =>
        (await list(acme.live, `?q=${encodeURIComponent(s)}`)).body.data.map((m: { recipient: string }) => m.recipient).sort();
      t.same(await q('l_u'), ['Literal_Under@Example.com'], '_ is literal');
      t.same(await q('LITERAL'), ['Literal_Under@Example.com', 'literalXunder@example.com'], 'case-insensitive');
      t.same(await q('0%'), ['Literal_Under@Example.com'], '% is literal');
      t.same(await q('a\\b'), ['back@example.com'], 'backslash is literal');
      t.same(await q('CAMPAIGNkey'), ['plain@example.com'], 'metadata keys');
      t.same(await q('spring'), ['plain@example.com'], 'metadata values');
      t.same(await q(a.slice(4, 20)), ['Literal_Under@Example.com'], 'public id');
      t.same(await q('nothing-like-this'), []);
      t.same(
        (await list(acme.live, `?q=example&metadata[note]=1000`)).body.data.map((m: { recipient: string }) => m.recipient),
        ['literalXunder@example.com'],
      );
    });

    t.test('tail: backfill of 50, then live events honouring filters; isolation', async (t) => {
      for (let i = 0; i < 55; i++) await send(acme.test, email(`tail${i}@example.com`, { batch: 'b1' }));
      await d.app.workers.find((w) => w.name === 'dispatcher')!.tick(); // settled: no live changes yet
      const tail = openTail(`${d.url}/v1/messages?tail=1&metadata[batch]=b1`, acme.test);
      t.teardown(() => tail.close());
      t.ok(await tail.until(() => tail.events.filter((e) => e.event === 'message').length >= 50));
      t.equal(tail.status, 200);
      t.match(tail.contentType, /text\/event-stream/);
      const backfill = tail.events.filter((e) => e.event === 'message').slice(0, 50);
      t.equal(backfill.length, 50);
      t.equal(backfill[49].data.recipient, 'tail54@example.com', 'the most recent last');
      t.equal(backfill[0].data.recipient, 'tail5@example.com');
      t.equal(backfill[0].id, backfill[0].data.publicId);
      // Live: a matching send shows (queued, then its progress); others do not.
      await send(acme.test, email('nomatch@example.com', { batch: 'b2' }));
      await send(acme.live, email('live@example.com', { batch: 'b1' }));
      await send(other.test, email('other@example.com', { batch: 'b1' }));
      const r = await send(acme.test, email('new@example.com', { batch: 'b1' }));
      t.ok(
        await tail.until(() => tail.events.some((e) => e.id === r.body.id && e.data.status === 'delivered')),
        'changes stream until delivered',
      );
      const liveOnes = tail.events.slice(backfill.length + 1).filter((e) => e.event === 'message');
      t.ok(
        liveOnes.every((e) => e.data.recipient === 'new@example.com' || e.data.recipient.startsWith('tail')),
        'filters and isolation honoured',
      );
      const statuses = liveOnes.filter((e) => e.id === r.body.id).map((e) => e.data.status);
      t.equal(statuses[0], 'queued');
      t.equal(statuses.at(-1), 'delivered');
    });

    t.test('tail: pings, and the stream ends when the daemon stops', async (t) => {
      const d2 = await bootDaemon(t, { db, env: { POSTERN_TAIL_PING: '50ms' } });
      const ws = await d2.workspace('pinger');
      const tail = openTail(`${d2.url}/v1/messages?tail=1`, ws.test);
      t.ok(await tail.until(() => tail.events.some((e) => e.comment === 'ping')), 'a ping comment arrives');
      await d2.stop();
      t.ok(await tail.until(() => tail.ended), 'stream ended on stop');
    });
  });
}
