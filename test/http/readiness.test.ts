// GET /readyz says whether this node can serve — the database answers, the listeners (HTTP, SMTP, metrics) are up, its
// migrations are applied — with the reasons when it cannot (503); /healthz stays a liveness
// answer. Every response carries X-Request-Id, and the log lines about the request name it.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/until.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`ready when the database answers, the listeners are up and the migrations applied (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ready = await d.request('GET', '/readyz');
    t.equal(ready.status, 200);
    t.same(ready.body, {
      ready: true,
      reasons: [],
      checks: { database: 'ok', migrationsPending: [], http: true, smtp: true, metrics: true, stopping: false },
    });
    t.equal(ready.headers.get('cache-control'), 'no-store');

    // A migration this build knows but the database lacks (a node older than its code): not ready.
    const last = await d.app.db
      .selectFrom('kysely_migration' as any)
      .selectAll()
      .orderBy('name', 'desc')
      .executeTakeFirstOrThrow();
    await d.app.db
      .deleteFrom('kysely_migration' as any)
      .where('name', '=', (last as any).name)
      .execute();
    const behind = await d.request('GET', '/readyz');
    t.equal(behind.status, 503);
    t.equal(behind.body.ready, false);
    t.same(behind.body.reasons, [`migrations not applied: ${(last as any).name}`]);
    await d.app.db
      .insertInto('kysely_migration' as any)
      .values(last as any)
      .execute();
    t.equal((await d.request('GET', '/readyz')).status, 200, 'ready again');
    t.same((await d.request('GET', '/healthz')).body, { ok: true }, 'liveness unchanged');
  });

  t.test(`every response carries X-Request-Id, and the access log names it (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const plain = await d.request('GET', '/v1/context', { key: ws.live });
    const id = plain.headers.get('x-request-id');
    t.match(id, /^[0-9a-f-]{36}$/, 'a fresh id');
    const given = await d.request('GET', '/v1/context', { key: ws.live, headers: { 'x-request-id': 'lb-7f3a.42' } });
    t.equal(given.headers.get('x-request-id'), 'lb-7f3a.42', "a proxy's id is kept");
    const hostile = await d.request('GET', '/v1/nope', { key: ws.live, headers: { 'x-request-id': 'x <script>alert(1)</script>' } });
    t.match(hostile.headers.get('x-request-id'), /^[0-9a-f-]{36}$/, 'anything else is replaced');
    t.equal(hostile.status, 404);
    // The access line is written once the response is finished: wait for the last request's.
    const lines = await until('the access line of the last request', () => {
      const http = d.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'http');
      return http.some((l) => l.path === '/v1/nope') && http;
    });
    t.ok(
      lines.some((l) => l.requestId === id && l.path === '/v1/context'),
      'the access line names the request',
    );
    t.ok(lines.some((l) => l.requestId === 'lb-7f3a.42'));
  });
}
