import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`API edge on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const acme = await d.workspace('acme', { plan: 'starter' });
    const other = await d.workspace('other');

    t.test('health needs no key', async (t) => {
      const r = await d.request('GET', '/healthz');
      t.equal(r.status, 200);
      t.same(r.body, { ok: true });
    });

    t.test('context answers with the key workspace and mode', async (t) => {
      const live = await d.request('GET', '/v1/context', { key: acme.live });
      t.equal(live.status, 200);
      t.same(live.body, { workspace: { id: acme.id, slug: 'acme', name: 'Workspace acme' }, mode: 'live' });
      const test = await d.request('GET', '/v1/context', { key: acme.test });
      t.equal(test.body.mode, 'test');
      const o = await d.request('GET', '/v1/context', { key: other.live });
      t.equal(o.body.workspace.slug, 'other', 'another workspace key sees only its own workspace');
    });

    t.test('401 for missing, malformed, unknown and revoked keys', async (t) => {
      for (const headers of [
        {},
        { authorization: 'Basic abc' },
        { authorization: 'Bearer' },
        { authorization: 'Bearer sk_live_nope' },
        { authorization: `Bearer ${acme.live}x` },
      ] as Record<string, string>[]) {
        const r = await d.request('GET', '/v1/context', { headers });
        t.equal(r.status, 401, JSON.stringify(headers));
        t.equal(r.body.error.code, 'unauthorized');
        t.type(r.body.error.message, 'string');
      }
      const k = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live');
      t.equal((await d.request('GET', '/v1/context', { key: k.json.secret })).status, 200);
      const rev = await d.cli('key', 'revoke', k.json.id);
      t.same(rev.json, { id: k.json.id, revoked: true });
      // The CLI is another process: the daemon's auth cache lets the key live at most auth.cacheTtl.
      d.clock.advance(d.app.config.auth.cacheTtl + 1);
      const r = await d.request('GET', '/v1/context', { key: k.json.secret });
      t.equal(r.status, 401);
      t.equal(r.body.error.code, 'unauthorized');
    });

    t.test('a test-prefixed string cannot claim live: env comes from the stored key', async (t) => {
      const forged = acme.live.replace('sk_live_', 'sk_test_');
      t.equal((await d.request('GET', '/v1/context', { key: forged })).status, 401);
    });

    t.test('scopes: a key without read gets 403 insufficient_scope', async (t) => {
      const send = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'send');
      t.same(send.json.scopes, ['send']);
      const r = await d.request('GET', '/v1/context', { key: send.json.secret });
      t.equal(r.status, 403);
      t.equal(r.body.error.code, 'insufficient_scope');
      t.match(r.body.error.message, /read/);
      const read = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read');
      t.equal((await d.request('GET', '/v1/context', { key: read.json.secret })).status, 200);
      const all = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'test');
      t.equal(all.json.scopes, null, 'no --scopes: unscoped');
      t.equal((await d.request('GET', '/v1/context', { key: all.json.secret })).status, 200);
    });

    t.test('unknown routes are 404 not_found in the envelope', async (t) => {
      const r = await d.request('GET', '/v1/nothing-here', { key: acme.live });
      t.equal(r.status, 404);
      t.equal(r.body.error.code, 'not_found');
      t.equal((await d.request('GET', '/nope')).status, 404);
    });

    t.test('a body that is not JSON is 400 invalid_request', async (t) => {
      const r = await d.request('POST', '/v1/context', { key: acme.live, rawBody: '{"broken":' });
      t.equal(r.status, 400);
      t.equal(r.body.error.code, 'invalid_request');
    });

    t.test('key list never shows secrets; CLI errors are JSON', async (t) => {
      const list = await d.cli('key', 'list', '--workspace', 'acme');
      t.equal(list.code, 0);
      t.ok(list.json.length >= 2);
      t.notMatch(list.stdout, acme.live);
      t.notOk('secret' in list.json[0]);
      const bad = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'prod');
      t.equal(bad.code, 1);
      t.equal(JSON.parse(bad.stderr).error.code, 'invalid_body');
      const missing = await d.cli('key', 'create', '--workspace', 'nope', '--env', 'live');
      t.equal(JSON.parse(missing.stderr).error.code, 'not_found');
      const dup = await d.cli('workspace', 'create', '--slug', 'acme', '--name', 'again');
      t.equal(JSON.parse(dup.stderr).error.code, 'already_exists');
      const ws = await d.cli('workspace', 'list');
      t.same(ws.json.map((w: { slug: string }) => w.slug).sort(), ['acme', 'other']);
    });

    t.test('logs never carry a key secret', async (t) => {
      const joined = d.logs.join('\n');
      t.ok(d.logs.length > 0, 'there are log lines to check');
      t.notMatch(joined, /sk_(live|test)_[0-9A-Za-z]{20}/);
    });
  });
}

t.test('rate limit: per key, separate read and send budgets', async (t) => {
  const d = await bootDaemon(t, { env: { POSTERN_RATE_LIMIT_READ: '3', POSTERN_RATE_LIMIT_SEND: '2' } });
  const acme = await d.workspace('acme');
  for (let i = 0; i < 3; i++) t.equal((await d.request('GET', '/v1/context', { key: acme.live })).status, 200);
  const limited = await d.request('GET', '/v1/context', { key: acme.live });
  t.equal(limited.status, 429);
  t.equal(limited.body.error.code, 'rate_limited');
  t.equal(limited.body.error.limit, 3);
  t.match(limited.headers.get('retry-after'), /^\d+$/);
  t.equal((await d.request('GET', '/v1/context', { key: acme.test })).status, 200, 'another key has its own budget');
  // The send budget is untouched by reads: a POST reaches routing (404 here, not 429).
  t.equal((await d.request('POST', '/v1/whatever', { key: acme.live, body: {} })).status, 404);
  d.clock.advance(1000);
  t.equal((await d.request('GET', '/v1/context', { key: acme.live })).status, 200, 'refilled after a second');
});
