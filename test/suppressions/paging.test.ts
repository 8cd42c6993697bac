// GET /v1/suppressions pages by `cursor` without skipping or repeating an entry, even when many
// entries share one millisecond (a bulk import, a burst of bounces): `before`, a bare timestamp,
// skipped those after the first page's boundary. `q` searches part of an address, literally.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`paging by cursor returns every entry once, even within one millisecond (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    // The test clock stands still: all 120 entries have the same createdAt.
    for (let i = 0; i < 120; i++) {
      const r = await d.request('POST', '/v1/suppressions', { key: ws.live, body: { address: `user${i}@example.com` } });
      t.equal(r.status, 201);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const path: string = `/v1/suppressions?limit=50${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await d.request('GET', path, { key: ws.live });
      t.equal(page.status, 200);
      seen.push(...page.body.data.map((s: any) => s.address));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    t.equal(pages, 3);
    t.equal(seen.length, 120, 'every entry');
    t.equal(new Set(seen).size, 120, 'none twice');

    const searched = await d.request('GET', '/v1/suppressions?q=USER11&limit=5', { key: ws.live });
    t.same(
      searched.body.data.map((s: any) => s.address),
      ['user110@example.com', 'user111@example.com', 'user112@example.com', 'user113@example.com', 'user114@example.com'],
    );
    const rest = await d.request('GET', `/v1/suppressions?q=user11&limit=5&cursor=${searched.body.nextCursor}`, { key: ws.live });
    t.same(
      rest.body.data.map((s: any) => s.address),
      ['user115@example.com', 'user116@example.com', 'user117@example.com', 'user118@example.com', 'user119@example.com'],
    );
    t.same((await d.request('GET', '/v1/suppressions?q=user_', { key: ws.live })).body.data, [], '_ is literal');

    const bad = await d.request('GET', '/v1/suppressions?cursor=nonsense', { key: ws.live });
    t.equal(bad.status, 400);
    t.match(bad.body.error, { code: 'invalid_request', message: /cursor/ });
  });
}
