// API keys in the browser: a key created on the page works at once against /v1/context, its
// secret is shown once and never again, and a revoked key answers 401.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`create a scoped key, use it, revoke it (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'Create a key' }).waitFor();
    await page.getByText('the key is unscoped and has full access').waitFor();
    await checkPage(t, page, 'keys-list');

    const form = page.getByRole('form', { name: 'Create a key' });
    await form.getByLabel('Name').fill('billing service');
    await form.getByLabel('Environment').selectOption('test');
    await form.getByRole('checkbox', { name: 'read' }).check();
    await form.getByRole('button', { name: 'Create key' }).click();
    const secretBox = page.locator('[data-secret]');
    await secretBox.waitFor();
    const secret = (await secretBox.textContent())!.trim();
    t.match(secret, /^sk_test_/, 'the secret is shown');
    await checkPage(t, page, 'keys-secret-once');

    const ctx = await fetch(`${daemon.url}/v1/context`, { headers: { authorization: `Bearer ${secret}` } });
    t.equal(ctx.status, 200, 'the new key works at once');
    const body = (await ctx.json()) as any;
    t.equal(body.workspace?.slug ?? body.workspace, 'acme', 'it acts on the chosen workspace');

    await page.getByRole('button', { name: 'I have copied it' }).click();
    const row = page.getByRole('row', { name: /billing service/ });
    await row.waitFor();
    t.match(await row.textContent(), /test/, 'the list shows the environment');
    t.match(await row.textContent(), /read/, 'the list shows the scopes');
    t.notOk(await page.content().then((html) => html.includes(secret)), 'the secret is gone once dismissed');

    await page.reload();
    await page.getByRole('row', { name: /billing service/ }).waitFor();
    t.notOk((await page.content()).includes(secret), 'a reload shows no secret');
    t.equal(await page.locator('[data-secret]').count(), 0, 'no secret box after a reload');

    await page.getByRole('button', { name: 'Revoke billing service' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await checkPage(t, page, 'keys-revoke-confirm');
    await dialog.getByRole('button', { name: 'Revoke', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page
      .getByRole('row', { name: /billing service/ })
      .getByRole('button')
      .waitFor({ state: 'detached' });
    await checkPage(t, page, 'keys-revoked');

    const after = await fetch(`${daemon.url}/v1/context`, { headers: { authorization: `Bearer ${secret}` } });
    t.equal(after.status, 401, 'the revoked key is refused');
  });
}
