// Single sign-on in Chromium against a real OpenID provider on loopback (oidc-provider from npm,
// with its development login and consent pages): an account in the owners' group signs in and is
// made an owner, one in the members' group a member, one in neither is refused, one whose email is
// not verified is refused; a replayed callback is refused; an ID token altered on its way from the
// token endpoint is refused (its signature is checked); logout goes through the provider's; a
// provider that is down is an error on the login page, never a 500. The provider is reached
// through a small proxy of the test's that can alter the token endpoint's answer.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { Page } from 'playwright-core';
import t from 'tap';
import { checkPage, launchBrowser } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

const ACCOUNTS: Record<string, { email: string; email_verified: boolean; groups: string[] }> = {
  ann: { email: 'Ann@corp.example', email_verified: true, groups: ['staff', 'postern-admins'] },
  bob: { email: 'bob@corp.example', email_verified: true, groups: ['postern-users'] },
  eve: { email: 'eve@corp.example', email_verified: true, groups: ['sales'] },
  una: { email: 'una@corp.example', email_verified: false, groups: ['postern-users'] },
};

const listen = (server: http.Server) =>
  new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

/**
 * The provider behind a proxy: the issuer is the proxy's URL (the Host header passes through, so the
 * provider names its endpoints there); `tamper` rewrites the ID token's payload in the token
 * endpoint's answer, keeping its signature; `down` answers nothing but a closed connection.
 */
async function startProvider(t: { teardown(fn: () => unknown): void }) {
  const proxy = http.createServer();
  const port = await listen(proxy);
  const issuer = `http://127.0.0.1:${port}`;
  const state = { tamper: false, down: false };
  // The provider is made once the daemon's URL is known (its client's redirect URIs name it); the
  // daemon asks the provider nothing before the first sign-in.
  const serve = async (daemonUrl: string) => {
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: 'postern',
          client_secret: 'a client secret of the test',
          redirect_uris: [`${daemonUrl}/dashboard/api/sso/callback`],
          post_logout_redirect_uris: [`${daemonUrl}/dashboard/`],
          response_types: ['code'],
          grant_types: ['authorization_code'],
        },
      ],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
      scopes: ['openid', 'email', 'groups'],
      findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id, ...ACCOUNTS[id] }) }),
      features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
      cookies: { keys: ['a cookie key of the test'] },
    });
    const backend = http.createServer(provider.callback());
    const backendPort = await listen(backend);
    t.teardown(() => new Promise((r) => backend.close(r)));
    t.teardown(() => backend.closeAllConnections());
    proxy.on('request', (req, res) => {
      if (state.down) return req.socket.destroy();
      const upstream = http.request(
        { host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          if (!(state.tamper && req.url?.startsWith('/token'))) {
            res.writeHead(up.statusCode!, up.headers);
            return up.pipe(res);
          }
          const chunks: Buffer[] = [];
          up.on('data', (c: Buffer) => chunks.push(c));
          up.on('end', () => {
            const body = JSON.parse(Buffer.concat(chunks).toString()) as { id_token: string };
            const [head, payload, signature] = body.id_token.split('.');
            const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
            claims.email = 'ann@corp.example';
            body.id_token = [head, Buffer.from(JSON.stringify(claims)).toString('base64url'), signature].join('.');
            const text = JSON.stringify(body);
            const headers = { ...up.headers, 'content-length': String(Buffer.byteLength(text)) };
            delete headers['transfer-encoding'];
            res.writeHead(up.statusCode!, headers);
            res.end(text);
          });
        },
      );
      req.pipe(upstream);
    });
  };
  t.teardown(() => new Promise((r) => proxy.close(r)));
  t.teardown(() => proxy.closeAllConnections());
  return { issuer, state, serve };
}

/** Signs in at the provider's development pages as `login`, then consents. */
async function atProvider(page: Page, login: string) {
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

for (const db of testDatabases()) {
  t.test(`operators sign in through an OpenID provider (${db})`, async (t) => {
    const { issuer, state, serve } = await startProvider(t);
    const daemon = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DASHBOARD_SSO_ISSUER: issuer,
        POSTERN_DASHBOARD_SSO_CLIENT_ID: 'postern',
        POSTERN_DASHBOARD_SSO_CLIENT_SECRET: 'a client secret of the test',
        POSTERN_DASHBOARD_SSO_NAME: 'Corp SSO',
        POSTERN_DASHBOARD_SSO_SCOPES: 'openid email groups',
        POSTERN_DASHBOARD_SSO_OWNER_GROUPS: 'postern-admins',
        POSTERN_DASHBOARD_SSO_MEMBER_GROUPS: 'postern-users',
      },
    });
    await serve(daemon.url);
    await daemon.workspace('acme');
    const browser = await launchBrowser(t);
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.on('pageerror', (err) => t.fail(`error in the page: ${err.message}`));

    // An owner by the provider's group.
    await page.goto(`${daemon.url}/dashboard/`);
    await checkPage(t, page, 'login-sso');
    await page.getByRole('link', { name: 'Sign in with Corp SSO' }).click();
    await atProvider(page, 'ann');
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    const ann = await daemon.app.operators.byEmail('ann@corp.example');
    t.equal(ann.role, 'owner', 'the owners’ group makes an owner, the email lowercased');
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByText('single sign-on', { exact: true }).waitFor();

    // Logout goes through the provider's and comes back to the login page.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: /Yes, sign me out/i }).click();
    await page.getByRole('link', { name: 'Sign in with Corp SSO' }).waitFor();
    t.match(page.url(), `${daemon.url}/dashboard/`, 'back on the login page');

    // A replayed callback: keep the callback URL of bob's sign-in, then send it again.
    let callback = '';
    page.on('request', (req) => {
      if (req.url().includes('/dashboard/api/sso/callback')) callback = req.url();
    });
    await page.getByRole('link', { name: 'Sign in with Corp SSO' }).click();
    await atProvider(page, 'bob');
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    t.equal((await daemon.app.operators.byEmail('bob@corp.example')).role, 'member', 'the members’ group makes a member');
    await page.getByText('You are not a member of any workspace yet').waitFor();
    const replay = await fetch(callback, { redirect: 'manual' });
    t.equal(replay.status, 302, 'a replayed callback goes back to the login page');
    const ssoError = (location: string | null) => new URL(location ?? '', daemon.url).searchParams.get('sso_error');
    t.match(ssoError(replay.headers.get('location')), /^single sign-on failed: this sign-in has expired or was already used/);
    t.notOk(replay.headers.get('set-cookie'), 'with no session');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: /Yes, sign me out/i }).click();
    await page.getByRole('link', { name: 'Sign in with Corp SSO' }).waitFor();

    // Refused: in none of the groups; an email the provider has not verified; a tampered ID token.
    for (const [login, why] of [
      ['eve', 'eve@corp.example is in none of the provider’s groups'],
      ['una', 'the provider has not verified una@corp.example'],
    ] as const) {
      await context.clearCookies(); // the refused account is still signed in at the provider
      await page.getByRole('link', { name: 'Sign in with Corp SSO' }).click();
      await atProvider(page, login);
      await page.getByText(why.replace('’', "'")).or(page.getByText(why)).waitFor();
      t.equal(await page.getByRole('navigation', { name: 'Dashboard' }).count(), 0, `${login} is not signed in`);
      await t.rejects(daemon.app.operators.byEmail(`${login}@corp.example`), `no operator is made for ${login}`);
    }
    state.tamper = true;
    await context.clearCookies();
    await page.getByRole('link', { name: 'Sign in with Corp SSO' }).click();
    await atProvider(page, 'bob');
    await page.getByText('single sign-on failed: invalid response encountered: JWT signature verification failed').waitFor();
    t.equal(await page.getByRole('navigation', { name: 'Dashboard' }).count(), 0, 'an altered ID token signs nobody in');
    state.tamper = false;

    // The provider down: an error on the login page, the password still works.
    state.down = true;
    const fresh = await bootDaemon(t, { db, env: { POSTERN_DASHBOARD_SSO_ISSUER: issuer, POSTERN_DASHBOARD_SSO_CLIENT_ID: 'postern' } });
    const down = await fetch(`${fresh.url}/dashboard/api/sso/start`, { redirect: 'manual' });
    t.equal(down.status, 302);
    t.match(ssoError(down.headers.get('location')), /^the sign-in provider at .* does not answer/);
    await page.goto(`${fresh.url}${down.headers.get('location')}`);
    await page.getByText('does not answer').waitFor();

    const audit = await daemon.app.audit.list({});
    const sso = audit.data.filter((e) => e.action === 'session.login' && e.target === 'sso');
    t.ok(
      sso.some((e) => e.outcome === 'ok' && e.operator.email === 'ann@corp.example'),
      'the audit log names the SSO sign-in',
    );
    t.ok(
      sso.some((e) => e.outcome === 'unauthorized'),
      'and the refused ones',
    );
  });
}
