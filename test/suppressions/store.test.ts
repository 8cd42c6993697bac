// The suppression store itself (src/suppressions/store.ts), on a migrated database of each dialect
// without a daemon: addresses normalized, a later hard reason replacing an unsubscribe and never the
// other way round, each environment its own list, reads of many at once, the list's order, cursor,
// filters and search, the walk over every page, and the cursor's encoding refusing what it did not
// make. What a daemon does with a listed recipient is test/suppressions/at-send.test.ts.
import t from 'tap';
import { ManualClock } from '../helpers/clock.js';
import { addSuppressionBody, listSuppressionsQuery } from '../../src/contract/suppression-schemas.js';
import { createSuppressionStore, decodePosition, encodePosition } from '../../src/suppressions/store.js';
import { createSuppressHook, createSuppressionCheck } from '../../src/outbound/suppression-hooks.js';
import { testDatabases } from '../helpers/databases.js';
import { openMigrated } from '../helpers/migrated-database.js';
import type { Channel } from '../../src/contract/channels.js';

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

t.test('the bodies the API takes: a detail of up to 500 characters, a time with any offset', async (t) => {
  t.ok(addSuppressionBody.safeParse({ address: 'a@example.com', detail: 'asked by phone' }).success, 'a short detail');
  t.ok(addSuppressionBody.safeParse({ address: 'a@example.com', detail: 'x'.repeat(500) }).success, '500 characters');
  t.notOk(addSuppressionBody.safeParse({ address: 'a@example.com', detail: 'x'.repeat(501) }).success, '501');
  t.equal(addSuppressionBody.parse({ address: 'a@example.com' }).reason, 'manual', 'the reason defaults to manual');
  for (const before of ['2026-11-28T10:00:00Z', '2026-11-28T10:00:00.000Z', '2026-11-28T12:00:00+02:00']) {
    t.ok(listSuppressionsQuery.safeParse({ before }).success, `before=${before}`);
  }
  t.notOk(listSuppressionsQuery.safeParse({ before: 'yesterday' }).success, 'not a time');
});

t.test('the cursor: what it encodes comes back; anything else is refused', async (t) => {
  const p = { createdAt: '2026-11-28T10:00:00.000Z', address: 'ann@example.com' };
  t.same(decodePosition(encodePosition(p)), p);
  for (const [why, cursor] of [
    ['not base64 JSON', '!!!'],
    ['not an array', b64({ createdAt: p.createdAt, address: p.address })],
    ['one element', b64([p.createdAt])],
    ['three elements', b64([p.createdAt, p.address, 'x'])],
    ['a number for the time', b64([1, p.address])],
    ['a number for the address', b64([p.createdAt, 1])],
    ['not a time', b64(['yesterday', p.address])],
  ] as const)
    t.equal(decodePosition(cursor), null, why);
});

for (const db of testDatabases()) {
  t.test(`the store (${db})`, async (t) => {
    const handle = await openMigrated(t, db);
    for (const id of ['w1', 'w2'])
      await handle.db
        .insertInto('workspaces')
        .values({ id, slug: id, name: id, plan: 'free', created_at: '2026-01-01T00:00:00.000Z' })
        .execute();
    const clock = new ManualClock(new Date('2026-11-28T10:00:00.000Z'));
    let n = 0;
    const store = createSuppressionStore({ db: handle.db, clock, ids: { uuid: () => `s${++n}` } as never });
    const live = { workspaceId: 'w1', livemode: true };
    const test = { workspaceId: 'w1', livemode: false };
    const other = { workspaceId: 'w2', livemode: true };
    const tick = () => clock.advance(1000);

    t.test('an address is kept trimmed and lowercase, and found in any case', async (t) => {
      const s = await store.add(live, { address: '  Ann@Example.COM ', reason: 'manual', detail: 'asked', messageId: 'msg_1' });
      t.same(s, {
        address: 'ann@example.com',
        reason: 'manual',
        detail: 'asked',
        messageId: 'msg_1',
        createdAt: clock.now().toISOString(),
        expiresAt: null,
      });
      t.same(await store.get(live, 'ANN@example.com'), s);
      t.equal(await store.get(test, 'ann@example.com'), null, 'not in the test environment');
      t.equal(await store.get(other, 'ann@example.com'), null, 'not in another workspace');
      t.same((await store.add(test, { address: 'ann@example.com', reason: 'bounce' })).detail, null, 'no detail');
      tick();
    });

    t.test('a hard reason replaces an unsubscribe; an unsubscribe never replaces a hard reason', async (t) => {
      await store.add(live, { address: 'bob@example.com', reason: 'unsubscribe' });
      tick();
      const hard = await store.add(live, { address: 'BOB@example.com', reason: 'bounce', detail: '550 5.1.1', messageId: 'msg_2' });
      t.same(hard, {
        address: 'bob@example.com',
        reason: 'bounce',
        detail: '550 5.1.1',
        messageId: 'msg_2',
        createdAt: clock.now().toISOString(),
        expiresAt: null,
      });
      tick();
      const again = await store.add(live, { address: 'bob@example.com', reason: 'unsubscribe' });
      t.same(again, hard, 'the bounce stays');
      const manual = await store.add(live, { address: 'bob@example.com', reason: 'manual' });
      t.same(manual, hard, 'a second hard reason keeps the first');
      tick();

      // An unsubscribe again keeps the first: its time is when the recipient first asked.
      const first = await store.add(live, { address: 'cid@example.com', reason: 'unsubscribe', detail: 'first', messageId: 'msg_3' });
      tick();
      t.same(await store.add(live, { address: 'cid@example.com', reason: 'unsubscribe', detail: 'second', messageId: 'msg_4' }), first);
      tick();
    });

    t.test('many at once, and removal', async (t) => {
      t.same([...(await store.getMany(live, []))], [], 'none asked');
      const many = await store.getMany(live, ['ANN@example.com', 'bob@example.com', 'nobody@example.com']);
      t.same([...many.keys()].sort(), ['ann@example.com', 'bob@example.com']);
      t.equal(many.get('bob@example.com')?.reason, 'bounce');
      t.same([...(await store.getMany(test, ['bob@example.com']))], [], 'per environment');
      await store.add(other, { address: 'gone@example.com', reason: 'manual' });
      t.equal(await store.remove(live, 'gone@example.com'), false, "another workspace's entry is not removed");
      t.equal(await store.remove(other, ' GONE@example.com'), true);
      t.equal(await store.remove(other, 'gone@example.com'), false, 'once');
      t.equal(await store.get(other, 'gone@example.com'), null);
    });

    t.test('the list: newest first, then by address; a cursor, a time, a reason and a search', async (t) => {
      for (const a of ['c@x.test', 'a@x.test', 'b@x.test']) await store.add(other, { address: a, reason: 'complaint' });
      tick();
      await store.add(other, { address: 'new%_@x.test', reason: 'manual' });
      const all = await store.list(other, { limit: 10 });
      t.same(
        all.map((s) => s.address),
        ['new%_@x.test', 'a@x.test', 'b@x.test', 'c@x.test'],
      );
      const first = await store.list(other, { limit: 2 });
      t.same(
        first.map((s) => s.address),
        ['new%_@x.test', 'a@x.test'],
      );
      const rest = await store.list(other, { limit: 10, after: { createdAt: first[1].createdAt, address: first[1].address } });
      t.same(
        rest.map((s) => s.address),
        ['b@x.test', 'c@x.test'],
        'after a position: the same second, later addresses, then older',
      );
      t.same(
        (await store.list(other, { limit: 10, before: all[0].createdAt })).map((s) => s.address),
        ['a@x.test', 'b@x.test', 'c@x.test'],
        'before a time',
      );
      t.same(
        (await store.list(other, { limit: 10, reason: 'manual' })).map((s) => s.address),
        ['new%_@x.test'],
      );
      t.same(
        (await store.list(other, { limit: 10, search: 'B@X' })).map((s) => s.address),
        ['b@x.test'],
        'a search is a part of the address, in any case',
      );
      t.same(
        (await store.list(other, { limit: 10, search: '%_' })).map((s) => s.address),
        ['new%_@x.test'],
        'its % and _ are the characters themselves',
      );
    });

    t.test('each: every entry once, page by page', async (t) => {
      const pages: string[][] = [];
      for await (const page of store.each(other, 2)) pages.push(page.map((s) => s.address));
      t.same(
        pages,
        [
          ['a@x.test', 'b@x.test'],
          ['c@x.test', 'new%_@x.test'],
        ],
        'a full last page ends on the empty one after it',
      );
      const threes: string[][] = [];
      for await (const page of store.each(other, 3)) threes.push(page.map((s) => s.address));
      t.same(threes, [['a@x.test', 'b@x.test', 'c@x.test'], ['new%_@x.test']], 'by address');
      const none: unknown[] = [];
      for await (const page of store.each({ workspaceId: 'w2', livemode: false })) none.push(page);
      t.same(none, [], 'an empty list yields no page');
    });

    t.test('the send check and the suppress hook', async (t) => {
      const check = createSuppressionCheck(store);
      const hook = createSuppressHook(store);
      const msg = (recipient: string, channel: Channel = 'email', templateSlug: string | null = null) => ({
        workspaceId: 'w1',
        livemode: true,
        channel,
        recipient,
        templateSlug,
      });
      t.same(await check(msg('bob@example.com')), {
        kind: 'suppressed',
        reason: 'bob@example.com is on the suppression list (bounce: 550 5.1.1)',
      });
      await store.add(live, { address: 'plain@example.com', reason: 'manual' });
      t.same(await check(msg('plain@example.com')), {
        kind: 'suppressed',
        reason: 'plain@example.com is on the suppression list (manual)',
      });
      await store.add(live, { address: 'unsub@example.com', reason: 'unsubscribe' });
      t.equal(await check(msg('unsub@example.com')), null, 'an unsubscribe holds only template sends');
      t.match(await check(msg('unsub@example.com', 'email', 'news')), {
        kind: 'opted_out',
        reason: /^unsub@example\.com unsubscribed on /,
      });
      t.equal(await check(msg('nobody@example.com')), null);

      const sub = JSON.stringify({ endpoint: 'https://push.example/abc', keys: { p256dh: 'k', auth: 'a' } });
      await hook({ ...msg(sub, 'web-push'), publicId: 'msg_9' }, '410 Gone');
      t.match(await store.get(live, 'https://push.example/abc'), { reason: 'unregistered', detail: '410 Gone', messageId: 'msg_9' });
      t.match(
        await check(msg(JSON.stringify({ endpoint: 'https://push.example/abc', keys: { p256dh: 'other', auth: 'b' } }), 'web-push')),
        {
          kind: 'suppressed',
        },
      );
      await hook({ ...msg('tok-1', 'push'), publicId: 'msg_10' }, 'Unregistered');
      t.match(await store.get(live, 'tok-1'), { reason: 'unregistered' });
      await hook({ ...msg('hard@example.com'), publicId: 'msg_11' }, '550 5.1.1');
      t.match(await store.get(live, 'hard@example.com'), { reason: 'bounce', messageId: 'msg_11' });
      t.equal(await check(msg('{not json', 'web-push')), null, 'a web-push recipient that is not JSON is looked up as it is');
      await store.add(live, { address: '{"endpoint": 5}', reason: 'manual' });
      t.match(await check(msg('{"endpoint": 5}', 'web-push')), { kind: 'suppressed' }, 'and one without a string endpoint');
    });
  });
}
