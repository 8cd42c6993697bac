// Authentication at the edge (http/auth.ts): the Authorization header's form, revoked keys, and the
// refusal of a key without the scope a route needs: the middleware's own rules, not the matrix of
// scopes over every route (test/http/scope-matrix.test.ts).
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`the bearer header, revocation and scope refusals (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const get = async (authorization?: string) => {
      const res = await fetch(`${d.url}/v1/context`, { headers: authorization === undefined ? {} : { authorization } });
      return { status: res.status, body: (await res.json()) as any };
    };

    const ok = await get(`Bearer ${ws.live}`);
    t.equal(ok.status, 200, 'a valid key');
    t.equal(ok.body.workspace?.slug, 'acme', 'resolves to its workspace');
    for (const header of [`bearer ${ws.live}`, `BEARER   ${ws.live}`, `Bearer ${ws.live}  `]) {
      t.equal((await get(header)).status, 200, `accepted: ${JSON.stringify(header.replace(ws.live, 'KEY'))}`);
    }

    const missing = await get();
    t.equal(missing.status, 401);
    t.match(missing.body, {
      error: { code: 'unauthorized', message: 'missing or malformed Authorization header; expected Bearer <API key>' },
    });
    for (const header of [
      '',
      ws.live,
      `Basic ${ws.live}`,
      `Bearer`,
      `Bearer `,
      `Bearer${ws.live}`,
      `Bearer ${ws.live} extra`,
      `xBearer ${ws.live}`,
    ]) {
      const r = await get(header);
      t.equal(r.status, 401, `refused: ${JSON.stringify(header.replace(ws.live, 'KEY'))}`);
      t.equal(r.body.error?.message, 'missing or malformed Authorization header; expected Bearer <API key>');
    }

    const wrong = await get(`Bearer ${ws.live.slice(0, -2)}zz`);
    t.equal(wrong.status, 401);
    t.match(wrong.body, { error: { code: 'unauthorized', message: 'invalid or revoked API key' } });

    const keys = await d.cli('key', 'list', '--workspace', 'acme');
    const liveKey = keys.json.find((k: any) => ws.live.startsWith(k.prefix));
    await d.app.keys.revoke(liveKey.id); // through the daemon, so its key cache forgets at once
    const revoked = await get(`Bearer ${ws.live}`);
    t.equal(revoked.status, 401, 'a revoked key');
    t.equal(revoked.body.error?.message, 'invalid or revoked API key');
    t.equal((await get(`Bearer ${ws.test}`)).status, 200, 'the other key still works');

    // A scoped key: the scope it has lets it through, the one it lacks answers 403 naming the scope.
    const scoped = await d.workspace('beta', { scopes: 'inbound' });
    const asScoped = (path: string) => d.request('GET', path, { key: scoped.live });
    t.equal((await asScoped('/v1/inbound/addresses')).status, 200, 'inbound may list addresses');
    const refused = await asScoped('/v1/context');
    t.equal(refused.status, 403);
    t.match(refused.body, { error: { code: 'insufficient_scope', message: 'this key lacks the read scope', scope: 'read' } });
  });
}
