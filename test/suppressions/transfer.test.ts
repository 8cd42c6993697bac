// Suppression lists in bulk on a booted daemon (src/suppressions/transfer.ts): imports of CSV (our
// columns, SendGrid's and Postmark's exports), NDJSON and JSON; wildcards and expiry holding sends
// as they should; an import repeated changes nothing; export read back by import; refusals. Its
// oracle is the plain path: the same lines added one by one (store.add) leave the same list.
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { holds } from '../helpers/property.js';
import { until } from '../helpers/until.js';

async function upload(d: TestDaemon, key: string, body: string | Buffer, type: string, query = '', headers: Record<string, string> = {}) {
  const res = await fetch(`${d.url}/v1/suppressions/import${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': type, ...headers },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function listOf(d: TestDaemon, key: string) {
  const r = await d.request('GET', '/v1/suppressions?limit=200', { key });
  return (r.body.data as { address: string; reason: string; detail: string | null; expiresAt: string | null }[])
    .map(({ address, reason, detail, expiresAt }) => ({ address, reason, detail, expiresAt }))
    .sort((a, b) => a.address.localeCompare(b.address));
}

for (const db of testDatabases()) {
  t.test(`suppressions in bulk on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const acme = await d.workspace('acme', { plan: 'pro' });
    const later = new Date(d.clock.now().getTime() + 3600_000).toISOString();

    t.test("CSV: Postern's columns, SendGrid's bounce export, Postmark's export", async (t) => {
      const ours = await upload(
        d,
        acme.test,
        `address,reason,detail,expires_at\nann@example.com,complaint,"said ""stop"", twice",\n*@blocked.example,manual,,\nbob@example.com,unsubscribe,,${later}\nnot an address,manual,,\n`,
        'text/csv',
      );
      t.same(ours.body, {
        lines: 4,
        stored: 3,
        unchanged: 0,
        refused: 1,
        errors: [{ line: 5, message: '"not an address" is not an email address or *@domain' }],
      });
      const sendgrid = await upload(
        d,
        acme.test,
        'email,created,status,reason\ncarol@example.com,1700000000,5.1.1,"550 5.1.1 The email account that you tried to reach does not exist"\n',
        'text/csv',
        '?reason=bounce',
      );
      t.match(sendgrid.body, { lines: 1, stored: 1 });
      const postmark = await upload(
        d,
        acme.test,
        'EmailAddress,SuppressionReason,Origin,CreatedAt\ndee@example.com,HardBounce,Recipient,2026-01-02T03:04:05Z\neve@example.com,SpamComplaint,Recipient,2026-01-02T03:04:05Z\n',
        'text/csv',
      );
      t.match(postmark.body, { lines: 2, stored: 2 });
      t.same(await listOf(d, acme.test), [
        { address: '*@blocked.example', reason: 'manual', detail: null, expiresAt: null },
        { address: 'ann@example.com', reason: 'complaint', detail: 'said "stop", twice', expiresAt: null },
        { address: 'bob@example.com', reason: 'unsubscribe', detail: null, expiresAt: later },
        {
          address: 'carol@example.com',
          reason: 'bounce',
          detail: '550 5.1.1 The email account that you tried to reach does not exist',
          expiresAt: null,
        },
        { address: 'dee@example.com', reason: 'bounce', detail: 'Recipient', expiresAt: null },
        { address: 'eve@example.com', reason: 'complaint', detail: 'Recipient', expiresAt: null },
      ]);
      const carol = (await d.request('GET', '/v1/suppressions?q=carol', { key: acme.test })).body.data[0];
      t.equal(carol.createdAt, '2023-11-14T22:13:20.000Z', "SendGrid's Unix `created` is kept");
    });

    t.test('the same file again changes nothing; a harder reason strengthens an unsubscribe', async (t) => {
      const file = 'address,reason\nfrank@example.com,unsubscribe\ngina@example.com,bounce\n';
      t.match((await upload(d, acme.test, file, 'text/csv')).body, { lines: 2, stored: 2, unchanged: 0 });
      t.match((await upload(d, acme.test, file, 'text/csv')).body, { lines: 2, stored: 0, unchanged: 2 });
      t.match((await upload(d, acme.test, 'address,reason\nfrank@example.com,bounce\ngina@example.com,unsubscribe\n', 'text/csv')).body, {
        stored: 1,
        unchanged: 1,
      });
      const rows = await listOf(d, acme.test);
      t.match(
        rows.find((r) => r.address === 'frank@example.com'),
        { reason: 'bounce' },
      );
      t.match(
        rows.find((r) => r.address === 'gina@example.com'),
        { reason: 'bounce' },
        'never weakened',
      );
    });

    t.test('NDJSON and JSON, gzip, and line numbers of what is refused', async (t) => {
      const ndjson = [
        '{"address":"h1@example.com","reason":"bounce"}',
        '',
        'not json',
        '{"email":"h2@example.com","expiresAt":"yesterday"}',
        '[1]',
        '{"address":"h3@example.com"}',
      ].join('\n');
      const r = await upload(d, acme.test, gzipSync(ndjson), 'application/x-ndjson', '', { 'content-encoding': 'gzip' });
      t.same(r.body, {
        lines: 5,
        stored: 2,
        unchanged: 0,
        refused: 3,
        errors: [
          { line: 3, message: 'not valid JSON' },
          { line: 4, message: 'expiresAt "yesterday" is not a time' },
          { line: 5, message: 'an entry is a JSON object' },
        ],
      });
      const json = await upload(
        d,
        acme.test,
        JSON.stringify([{ address: 'i1@example.com' }, { address: 'i2@example.com', reason: 'spam report' }]),
        'application/json',
      );
      t.match(json.body, { lines: 2, stored: 2 });
      t.match(
        (await listOf(d, acme.test)).find((e) => e.address === 'i2@example.com'),
        { reason: 'complaint' },
      );
    });

    t.test('wildcards and expiry hold sends as they should', async (t) => {
      const send = (to: string) =>
        d.request('POST', '/v1/send', { key: acme.test, body: { to, channel: 'email', content: { subject: 's', text: 't' } } });
      const statusOf = (id: string) =>
        until(`message ${id} settled`, async () => {
          const m = await d.request('GET', `/v1/messages/${id}`, { key: acme.test });
          return ['suppressed', 'delivered', 'opted_out', 'sent', 'failed'].includes(m.body.status) && m.body;
        });
      const wild = await send('anyone@blocked.example');
      t.match(await statusOf(wild.body.id), { status: 'suppressed', error: /\*@blocked\.example is on the suppression list/ });
      const sub = await send('someone@sub.blocked.example');
      t.not((await statusOf(sub.body.id)).status, 'suppressed', 'a wildcard is its domain, not its subdomains');
      await upload(d, acme.test, 'address,reason\n*@strict.example,bounce\nann@strict.example,unsubscribe\n', 'text/csv');
      const through = await send('ann@strict.example');
      t.match(
        await statusOf(through.body.id),
        { status: 'suppressed', error: /\*@strict\.example/ },
        "an address's unsubscribe does not lift its domain's bounce",
      );
      const t1 = await upload(
        d,
        acme.test,
        `{"address":"temp@example.com","reason":"bounce","expiresAt":"${later}"}`,
        'application/x-ndjson',
      );
      t.match(t1.body, { stored: 1 });
      const held = await send('temp@example.com');
      t.equal((await statusOf(held.body.id)).status, 'suppressed');
      d.clock.advance(2 * 3600_000);
      const free = await send('temp@example.com');
      t.not((await statusOf(free.body.id)).status, 'suppressed', 'the entry expired');
      t.notOk(
        (await listOf(d, acme.test)).some((e) => e.address === 'temp@example.com'),
        'and the list no longer shows it',
      );
      const again = await upload(d, acme.test, 'address,reason\ntemp@example.com,manual\n', 'text/csv');
      t.match(again.body, { stored: 1 }, 'an expired entry is replaced by an import');
    });

    t.test('export is what import reads: a round trip into another workspace', async (t) => {
      const other = await d.workspace('other', { plan: 'pro' });
      for (const format of ['csv', 'ndjson'] as const) {
        const res = await fetch(`${d.url}/v1/suppressions/export?format=${format}`, { headers: { authorization: `Bearer ${acme.test}` } });
        t.equal(res.status, 200);
        t.match(res.headers.get('content-type'), format === 'csv' ? /^text\/csv/ : /^application\/x-ndjson/);
        const text = await res.text();
        const target = format === 'csv' ? other.test : other.live;
        const r = await upload(d, target, text, format === 'csv' ? 'text/csv' : 'application/x-ndjson');
        t.equal(r.body.refused, 0);
        t.same(await listOf(d, target), await listOf(d, acme.test), `${format}: the same list`);
      }
    });

    t.test('refusals: the whole request, in the envelope', async (t) => {
      t.match(await upload(d, acme.test, 'name,reason\nx,y\n', 'text/csv'), {
        status: 400,
        body: { error: { code: 'invalid_request', message: /no address column/ } },
      });
      t.match(await upload(d, acme.test, 'address\n"unclosed\n', 'text/csv'), {
        status: 400,
        body: { error: { code: 'invalid_request', message: /^CSV: / } },
      });
      t.match(await upload(d, acme.test, 'address\na@example.com\n', 'text/plain'), {
        status: 415,
        body: { error: { code: 'unsupported_media_type' } },
      });
      t.match(await upload(d, acme.test, 'address\na@example.com\n', 'text/csv', '?reason=whatever'), {
        status: 400,
        body: { error: { code: 'invalid_request', message: /reason must be one of/ } },
      });
      t.match(await upload(d, acme.test, '{"a":1}', 'application/json'), { status: 400, body: { error: { message: /array/ } } });
      t.match(await upload(d, acme.test, 'not gzip', 'text/csv', '', { 'content-encoding': 'gzip' }), {
        status: 400,
        body: { error: { code: 'invalid_request' } },
      });
      const read = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'test', '--scopes', 'read')).json.secret as string;
      t.match(await upload(d, read, 'address\na@example.com\n', 'text/csv'), {
        status: 403,
        body: { error: { code: 'insufficient_scope' } },
      });
    });

    t.test('20,000 lines stream through in chunks', async (t) => {
      const lines = Array.from({ length: 20_000 }, (_v, i) => `bulk${i}@example.org,${i % 3 === 0 ? 'unsubscribe' : 'bounce'}`).join('\n');
      const r = await upload(d, acme.live, `email,reason\n${lines}\n`, 'text/csv');
      t.match(r.body, { lines: 20_000, stored: 20_000, refused: 0 });
      const rows = await d.app.db
        .selectFrom('suppressions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', acme.id)
        .where('livemode', '=', 1)
        .executeTakeFirstOrThrow();
      t.equal(Number(rows.n), 20_000);
    });

    t.test('oracle: an import leaves the list that adding its lines one by one leaves', async (t) => {
      let round = 0;
      const entry = fc.record({
        address: fc.constantFrom('p@example.com', 'q@example.com', 'r@example.com', '*@example.net', 's@example.net'),
        reason: fc.constantFrom('bounce', 'complaint', 'manual', 'unsubscribe'),
        detail: fc.option(fc.constantFrom('one', 'two'), { nil: undefined }),
        expires: fc.boolean(),
      });
      await holds(
        t,
        'import = one add per line',
        fc.asyncProperty(fc.array(entry, { maxLength: 6 }), fc.array(entry, { minLength: 1, maxLength: 12 }), async (seed, lines) => {
          round++;
          const a = await d.workspace(`imp${round}`, { plan: 'pro' });
          const b = await d.workspace(`add${round}`, { plan: 'pro' });
          const expiresAt = new Date(d.clock.now().getTime() + 3600_000).toISOString();
          const withExpiry = (e: (typeof lines)[number]) => ({
            address: e.address,
            reason: e.reason as 'bounce',
            detail: e.detail,
            expiresAt: e.expires ? expiresAt : undefined,
          });
          for (const ws of [a, b])
            for (const e of seed) await d.app.suppressions.add({ workspaceId: ws.id, livemode: false }, withExpiry(e));
          await upload(d, a.test, lines.map((e) => JSON.stringify(withExpiry(e))).join('\n'), 'application/x-ndjson');
          for (const e of lines) await d.app.suppressions.add({ workspaceId: b.id, livemode: false }, withExpiry(e));
          const [x, y] = [await listOf(d, a.test), await listOf(d, b.test)];
          if (JSON.stringify(x) !== JSON.stringify(y)) throw new Error(JSON.stringify({ imported: x, added: y }));
        }),
        25,
      );
    });
  });
}
