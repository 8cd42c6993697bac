// Operators, sessions and the dashboard's security over plain HTTP: the setup link, the login
// throttle, the cookie's attributes, idle and absolute expiry, logout, CSRF on every
// state-changing call (dashboard routes and /v1 alike), the security headers, and the audit log.
import t from 'tap';
import { bootDaemon } from '../../helpers/daemon.js';
import { dashboardLogin, OWNER } from '../../helpers/dashboard.js';
import { testDatabases } from '../../helpers/databases.js';

const MINUTE = 60_000;

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

t.test('the setup link makes the first owner once, within its hour', async (t) => {
  const daemon = await bootDaemon(t);
  await daemon.workspace('acme');
  const token = await daemon.app.operators.issueSetupToken();
  t.ok(token, 'a link while there is no operator');
  t.equal(await daemon.app.operators.issueSetupToken(), null, 'not a second one while the first is valid');

  const weak = await post(`${daemon.url}/dashboard/api/setup`, { token, email: OWNER.email, password: 'short' });
  t.equal(weak.status, 422, 'a weak password is refused');
  t.match(weak.body.error.issues[0], { path: 'password', message: /at least 10/ });

  const made = await post(`${daemon.url}/dashboard/api/setup`, { token, ...OWNER });
  t.equal(made.status, 201, 'the link still works after a refused form');
  t.equal(made.body.operator.role, 'owner');
  t.ok(made.body.selection, 'the new owner acts on the first workspace at once');
  const cookie = made.headers.get('set-cookie') ?? '';
  t.match(
    cookie,
    /^postern_session=[0-9A-Za-z]{40,}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/,
    'HttpOnly, SameSite=Strict, not Secure on http',
  );

  const again = await post(`${daemon.url}/dashboard/api/setup`, { token, email: 'second@postern.test', password: 'another long password' });
  t.equal(again.status, 410, 'used once');
  t.equal(await daemon.app.operators.issueSetupToken(), null, 'no link once an operator exists');

  const stored = await daemon.app.db.selectFrom('operators').select('password_hash').executeTakeFirstOrThrow();
  t.match(stored.password_hash, /^scrypt\$32768\$8\$1\$/, 'scrypt, 32 MiB');
  t.notMatch(stored.password_hash, OWNER.password);
});

t.test('an expired setup link is gone', async (t) => {
  const daemon = await bootDaemon(t);
  const token = await daemon.app.operators.issueSetupToken();
  daemon.clock.advance(61 * MINUTE);
  const late = await post(`${daemon.url}/dashboard/api/setup`, { token, ...OWNER });
  t.equal(late.status, 410);
  t.match(late.body.error.message, /postern operator create/);
  t.ok(await daemon.app.operators.issueSetupToken(), 'a new start may print a new one');
});

t.test('the session cookie is Secure when publicUrl is https', async (t) => {
  const daemon = await bootDaemon(t, { env: { POSTERN_PUBLIC_URL: 'https://mail.example.com' } });
  await daemon.app.operators.create({ ...OWNER, role: 'owner' });
  const res = await post(`${daemon.url}/dashboard/api/login`, OWNER);
  t.equal(res.status, 200);
  t.match(res.headers.get('set-cookie'), /; Secure$/);
});

t.test('logins are throttled per account and per address, with a clear message', async (t) => {
  const daemon = await bootDaemon(t, { env: { POSTERN_DASHBOARD_LOGIN_FAILURES_PER_ADDRESS: '8' } });
  await daemon.app.operators.create({ ...OWNER, role: 'owner' });
  for (let i = 0; i < 5; i++) {
    const wrong = await post(`${daemon.url}/dashboard/api/login`, { email: OWNER.email, password: `wrong password ${i}` });
    t.equal(wrong.status, 401, `wrong password ${i + 1}`);
    t.equal(wrong.body.error.message, 'wrong email or password');
  }
  const throttled = await post(`${daemon.url}/dashboard/api/login`, OWNER);
  t.equal(throttled.status, 429, 'the right password is refused too while the account is throttled');
  t.match(throttled.body.error.message, /too many failed logins for this account; try again in 15 minutes/);
  t.equal(throttled.headers.get('retry-after'), '900');

  // Other accounts from the same address: three more failures reach the address's limit of 8.
  for (let i = 0; i < 3; i++)
    await post(`${daemon.url}/dashboard/api/login`, { email: `nobody${i}@postern.test`, password: 'whatever it is' });
  const byAddress = await post(`${daemon.url}/dashboard/api/login`, { email: 'someone@postern.test', password: 'whatever it is' });
  t.equal(byAddress.status, 429);
  t.match(byAddress.body.error.message, /from your address/);

  daemon.clock.advance(16 * MINUTE);
  const later = await post(`${daemon.url}/dashboard/api/login`, OWNER);
  t.equal(later.status, 200, 'the window passes');

  const audit = await daemon.app.audit.list({ limit: 20 });
  const logins = audit.data.filter((e) => e.action === 'session.login');
  t.equal(logins.filter((e) => e.outcome === 'unauthorized').length, 8, 'failed logins are audited');
  t.equal(logins.filter((e) => e.outcome === 'rate_limited').length, 2);
  t.equal(logins[0].outcome, 'ok');
  t.equal(logins[0].ip, '127.0.0.1');
});

t.test('sessions end when idle, at their absolute expiry, and at logout', async (t) => {
  const daemon = await bootDaemon(t);
  await daemon.workspace('acme');
  const idle = await dashboardLogin(daemon);
  t.equal((await idle.request('GET', '/dashboard/api/me')).status, 200);
  daemon.clock.advance(59 * MINUTE);
  t.equal((await idle.request('GET', '/dashboard/api/me')).status, 200, 'within the idle hour');
  daemon.clock.advance(61 * MINUTE);
  t.equal((await idle.request('GET', '/dashboard/api/me')).status, 401, 'idle for over an hour');

  const busy = await dashboardLogin(daemon);
  for (let h = 0; h < 11; h++) {
    daemon.clock.advance(55 * MINUTE);
    t.equal((await busy.request('GET', '/v1/context')).status, 200, `in use, hour ${h + 1}`);
  }
  daemon.clock.advance(61 * MINUTE);
  t.equal((await busy.request('GET', '/v1/context')).status, 401, 'past twelve hours whatever the use');

  const leaving = await dashboardLogin(daemon);
  const out = await leaving.request('POST', '/dashboard/api/logout');
  t.equal(out.status, 200);
  t.match(out.headers.get('set-cookie'), /postern_session=; .*Max-Age=0/);
  t.equal((await leaving.request('GET', '/dashboard/api/me')).status, 401, 'the old cookie no longer works');
  t.equal((await leaving.request('GET', '/v1/context')).status, 401);
});

t.test('a session acts on /v1 for the workspace and environment it chose', async (t) => {
  const daemon = await bootDaemon(t);
  const acme = await daemon.workspace('acme');
  const other = await daemon.workspace('other');
  const owner = await dashboardLogin(daemon);
  const ctx = await owner.request('GET', '/v1/context');
  t.equal(ctx.status, 200);
  t.equal(ctx.body.workspace.slug, 'acme', 'the first workspace');
  t.equal(ctx.body.mode, 'live');

  const chosen = await owner.request('PUT', '/dashboard/api/selection', { workspaceId: other.id, env: 'test' });
  t.equal(chosen.status, 200);
  const now = await owner.request('GET', '/v1/context');
  t.equal(now.body.workspace.slug, 'other');
  t.equal(now.body.mode, 'test');

  // A member acts only on its workspaces.
  await daemon.app.operators.create({ email: 'member@postern.test', password: 'member password 1', role: 'member', workspaces: ['acme'] });
  const member = await dashboardLogin(daemon, { email: 'member@postern.test', password: 'member password 1' }, false);
  t.same(
    member.me.workspaces.map((w: any) => w.slug),
    ['acme'],
  );
  const refused = await member.request('PUT', '/dashboard/api/selection', { workspaceId: other.id, env: 'live' });
  t.equal(refused.status, 403);
  t.equal(refused.body.error.code, 'forbidden');
  t.equal((await member.request('GET', '/v1/context')).body.workspace.id, acme.id);
});

t.test('CSRF: a state-changing call without the token, or from another site, is refused', async (t) => {
  const daemon = await bootDaemon(t);
  await daemon.workspace('acme');
  const owner = await dashboardLogin(daemon);
  const send = { channel: 'email', to: 'a@example.com', content: { subject: 'hi', text: 'hello' } };

  const noToken = await owner.request('POST', '/v1/send', send, { 'x-csrf-token': '' });
  t.equal(noToken.status, 403, '/v1 without the token');
  t.match(noToken.body.error, { code: 'forbidden', message: /CSRF token/ });
  const wrongToken = await owner.request('POST', '/dashboard/api/keys', { env: 'live' }, { 'x-csrf-token': 'guessed' });
  t.equal(wrongToken.status, 403, 'dashboard route with a wrong token');

  const otherOrigin = await owner.request('POST', '/v1/send', send, { origin: 'http://evil.example' });
  t.equal(otherOrigin.status, 403, 'another Origin, even with the token');
  const crossSite = await owner.request('POST', '/v1/send', send, { 'sec-fetch-site': 'cross-site' });
  t.equal(crossSite.status, 403, 'Sec-Fetch-Site: cross-site');
  const loginElsewhere = await post(`${daemon.url}/dashboard/api/login`, OWNER, { origin: 'http://evil.example' });
  t.equal(loginElsewhere.status, 403, 'no login from another site');

  const ok = await owner.request('POST', '/v1/send', send, { origin: daemon.url, 'sec-fetch-site': 'same-origin' });
  t.equal(ok.status, 202, 'the page itself gets through');
  t.equal((await daemon.app.db.selectFrom('messages').select('id').execute()).length, 1, 'only one message was made');

  const audit = await daemon.app.audit.list();
  const sends = audit.data.filter((e) => e.action === 'POST /v1/send');
  // Refused before a session is resolved (wrong token, other site) is not an action taken.
  t.same(
    sends.map((e) => e.outcome),
    ['ok'],
  );
  t.match(sends[0], { operator: { email: OWNER.email }, target: '/v1/send', outcome: 'ok', env: 'live', ip: '127.0.0.1' });
});

t.test('security headers on every dashboard response; / redirects to the dashboard', async (t) => {
  const daemon = await bootDaemon(t);
  const root = await fetch(`${daemon.url}/`, { redirect: 'manual' });
  t.equal(root.status, 302);
  t.equal(root.headers.get('location'), '/dashboard/');
  const page = await fetch(`${daemon.url}/dashboard/messages/msg_x`);
  const api = await fetch(`${daemon.url}/dashboard/api/me`);
  const html = await page.text();
  const asset = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  t.ok(asset, 'the page names its bundle');
  const js = await fetch(`${daemon.url}${asset}`, { headers: { 'accept-encoding': 'br, gzip' } });
  t.equal(js.headers.get('content-encoding'), 'br', 'precompressed');
  t.match(js.headers.get('cache-control'), /immutable/);
  for (const [name, res] of [
    ['page', page],
    ['api', api],
    ['asset', js],
  ] as const) {
    const csp = res.headers.get('content-security-policy') ?? '';
    t.match(csp, /default-src 'none'/, `${name}: CSP`);
    t.match(csp, /script-src 'self'(;|$)/, `${name}: scripts only from the package`);
    t.match(csp, /frame-ancestors 'none'/, `${name}: never framed`);
    t.equal(res.headers.get('x-content-type-options'), 'nosniff', `${name}: nosniff`);
    t.equal(res.headers.get('referrer-policy'), 'no-referrer', `${name}: no referrer`);
  }
  t.equal(page.status, 200, 'a deep link serves the page');
  t.equal(api.status, 401);
  t.equal(((await api.json()) as any).error.code, 'unauthorized');
  t.equal(page.headers.get('cache-control'), 'no-store');
});

for (const db of testDatabases()) {
  t.test(`sessions and the login throttle are shared by nodes on one database (${db})`, async (t) => {
    const a = await bootDaemon(t, { db });
    const b = await bootDaemon(t, db === 'postgres' ? { databaseUrl: a.env.POSTERN_DATABASE_URL } : { dataDir: a.dataDir });
    await a.workspace('acme');
    const onA = await dashboardLogin(a);
    const ctx = await fetch(`${b.url}/v1/context`, { headers: { cookie: onA.cookie } });
    t.equal(ctx.status, 200, 'a session opened on one node works on the other');
    t.equal(((await ctx.json()) as any).workspace.slug, 'acme');

    for (let i = 0; i < 5; i++) await post(`${a.url}/dashboard/api/login`, { email: OWNER.email, password: `wrong ${i} wrong` });
    const onB = await post(`${b.url}/dashboard/api/login`, OWNER);
    t.equal(onB.status, 429, 'failures on one node throttle the account on the other');

    const out = await fetch(`${b.url}/dashboard/api/logout`, { method: 'POST', headers: { cookie: onA.cookie, 'x-csrf-token': onA.csrf } });
    t.equal(out.status, 200);
    t.equal((await onA.request('GET', '/dashboard/api/me')).status, 401, 'logging out on one node ends it on the other');
  });
}
