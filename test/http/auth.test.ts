// Authentication at the edge (http/auth.ts): the Authorization header's form, revoked keys, and the
// refusal of a key without the scope a route needs: the middleware's own rules, not the matrix of
// scopes over every route (test/http/scope-matrix.test.ts).
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { dashboardLogin } from '../helpers/dashboard.js';
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

  t.test(`a request without the header may come from a dashboard session; a header always decides (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const acme = await d.workspace('acme');
    const beta = await d.workspace('beta');
    const owner = await dashboardLogin(d);
    const slugOf = (res: { body: any }) => res.body.workspace?.slug;

    const bySession = await owner.request('GET', '/v1/context');
    t.equal(bySession.status, 200, 'the session authenticates /v1 when no header is sent');
    const chosen = slugOf(bySession);
    t.ok(chosen === 'acme' || chosen === 'beta', `as the session's workspace (${chosen})`);

    // With the session's cookie and a header, the header decides: another workspace's key is that
    // workspace, a bad key is refused although the session is good.
    const other = chosen === 'acme' ? beta : acme;
    const withKey = await owner.request('GET', '/v1/context', undefined, { authorization: `Bearer ${other.live}` });
    t.equal(withKey.status, 200);
    t.equal(slugOf(withKey), chosen === 'acme' ? 'beta' : 'acme', "the key's workspace, not the session's");
    const badKey = await owner.request('GET', '/v1/context', undefined, { authorization: `Bearer ${other.live.slice(0, -2)}zz` });
    t.equal(badKey.status, 401, 'a bad key with a good session is refused');
    t.match(badKey.body, { error: { code: 'unauthorized', message: 'invalid or revoked API key' } });

    // A cookie that names no session is not a way in, and neither is no cookie at all.
    const stale = await fetch(`${d.url}/v1/context`, { headers: { cookie: owner.cookie.replace(/=.*/, '=not-a-session') } });
    t.equal(stale.status, 401, 'an unknown session');
    const none = await fetch(`${d.url}/v1/context`);
    t.equal(none.status, 401, 'neither header nor session');
    t.match(await none.json(), { error: { code: 'unauthorized', message: /missing or malformed Authorization header/ } });
  });
}
