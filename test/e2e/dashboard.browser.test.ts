// The operator's journey through the dashboard in a real browser (headless Chromium) against the
// real daemon. This file holds the first run (the setup link), the login throttle and a
// cross-site form refused; each page's own journey lives beside it in test/http/dashboard/:
// a key created, used with /v1/context and revoked (401) in keys.browser.test.ts; a test message
// seen in the live tail and opened in messages.browser.test.ts; a received mail whose script never
// runs and whose remote image is not fetched in inbound.browser.test.ts, with a domain claimed and
// its records shown; a template created, previewed, published and diffed in
// templates.browser.test.ts. axe-core runs on every page, and every page is saved as a screenshot.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { checkPage, launchBrowser, OWNER } from '../helpers/browser.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`first run: the setup link makes the owner, who lands on the overview (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    const token = await daemon.app.operators.issueSetupToken();
    const browser = await launchBrowser(t);
    const page = await browser.newPage();
    page.on('pageerror', (err) => t.fail(`error in the page: ${err.message}`));
    await page.goto(`${daemon.url}/dashboard/setup?token=${token}`);
    await page.getByRole('heading', { name: 'Set up Postern' }).waitFor();
    await checkPage(t, page, 'setup');
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password', { exact: true }).fill(OWNER.password);
    await page.getByLabel('Password again').fill(OWNER.password);
    await page.getByRole('button', { name: 'Create owner' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    t.equal(new URL(page.url()).pathname, '/dashboard/', 'the setup page is left for the overview');
    t.equal(await page.locator('#ws-select option:checked').textContent(), 'Workspace acme');

    // Log out, and the link is spent: a second visit shows the setup form, which is refused.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await checkPage(t, page, 'login');
    await page.goto(`${daemon.url}/dashboard/setup?token=${token}`);
    await page.getByLabel('Email').fill('second@postern.test');
    await page.getByLabel('Password', { exact: true }).fill('another long password');
    await page.getByLabel('Password again').fill('another long password');
    await page.getByRole('button', { name: 'Create owner' }).click();
    await page.getByRole('alert').filter({ hasText: 'used or expired' }).waitFor();
  });

  t.test(`a wrong password is throttled, with a clear message (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    await daemon.app.operators.create({ ...OWNER, role: 'owner' });
    const browser = await launchBrowser(t);
    const page = await browser.newPage();
    await page.goto(`${daemon.url}/dashboard/`);
    for (let i = 1; i <= 5; i++) {
      await page.getByLabel('Email').fill(OWNER.email);
      await page.getByLabel('Password').fill(`not the password ${i}`);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('alert').filter({ hasText: 'wrong email or password' }).waitFor();
    }
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'too many failed logins' });
    await alert.waitFor();
    t.match(await alert.textContent(), /too many failed logins for this account; try again in 15 minutes/);
    await checkPage(t, page, 'login-throttled');
    t.equal(await page.getByRole('navigation', { name: 'Dashboard' }).count(), 0, 'still logged out');
  });

  t.test(`CSRF: a form on another site posting to the dashboard and to /v1 is refused (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    const browser = await launchBrowser(t);
    const { loggedIn } = await import('../helpers/browser.js');
    const { context, page } = await loggedIn(t, browser, daemon);
    t.ok((await context.cookies()).some((c) => c.name === 'postern_session' && c.httpOnly && c.sameSite === 'Strict'));

    // The attacker's page: another site (localhost is not 127.0.0.1) with forms that post at once.
    const target = daemon.url;
    const evil = http.createServer((req, res) => {
      const form = req.url?.includes('v1')
        ? `<form method="post" action="${target}/v1/send-raw" enctype="text/plain"><input name='{"channel":"email","to":"x@example.com","content":{"subject":"csrf","text":"x"},"pad":"' value='"}'></form>`
        : `<form method="post" action="${target}/dashboard/api/keys"><input name="env" value="live"></form>`;
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>win a prize</title>${form}<script>document.forms[0].submit()</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    t.teardown(() => evil.close());
    const evilUrl = `http://localhost:${(evil.address() as AddressInfo).port}`;

    const keysBefore = (await daemon.app.keys.list((await daemon.app.workspaces.bySlug('acme')).id)).length;
    for (const path of ['/dashboard', '/v1']) {
      const answered = page.waitForResponse((r) => r.url().startsWith(target) && r.request().method() === 'POST');
      await page.goto(`${evilUrl}${path}`);
      const res = await answered;
      t.ok([401, 403].includes(res.status()), `${path}: the cross-site post is refused (${res.status()})`);
    }
    t.equal((await daemon.app.keys.list((await daemon.app.workspaces.bySlug('acme')).id)).length, keysBefore, 'no key was made');
    t.equal((await daemon.app.db.selectFrom('messages').select('id').execute()).length, 0, 'no message was sent');
    await page.goto(`${daemon.url}/dashboard/`);
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    t.pass('the session itself is untouched');
  });
}
