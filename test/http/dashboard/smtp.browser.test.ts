// The SMTP page in the browser: the settings to copy (host, the ports listened on, user names) or,
// with submission off, how to turn it on; an SMTP credential created on the page is shown once,
// works at once for AUTH over STARTTLS (Python's smtplib), is listed with its user name,
// environment and last use (never its secret), and once revoked gets 535.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { dashboardLogin } from '../../helpers/dashboard.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { compose, smtplib } from '../../helpers/submission-clients.js';

for (const db of testDatabases()) {
  t.test(`settings, create a credential, use it, revoke it (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db, env: { POSTERN_SUBMISSION_ENABLED: 'true' } });
    await daemon.workspace('acme');
    const login = async (user: string, password: string) =>
      (
        await smtplib(
          daemon.submissionPort!,
          { user, password, from: 'app@acme.example', to: ['one@example.net'], raw: await compose({ subject: 'x', text: 'x' }) },
          { tls: 'starttls', mechanism: 'PLAIN' },
        )
      ).login;
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.getByRole('link', { name: 'SMTP', exact: true }).click();
    const settings = page.getByRole('region', { name: 'Settings to copy' });
    await settings.waitFor();
    await settings.getByText('mx.postern.test').waitFor();
    const text = (await settings.textContent())!;
    t.match(text, `Port (STARTTLS)${daemon.submissionPort}`, 'the STARTTLS port listened on');
    t.match(text, /Port \(TLS\)off/, 'implicit TLS off (its port is 0)');
    t.match(text, /User namea credential's \(smtp_…\), or apikey or acme/, 'the user names: a credential, or those of API keys');
    t.match(text, /Passwordthe credential's, or an API key with the send scope/);
    await page.getByText('No SMTP credentials yet.').waitFor();
    await checkPage(t, page, 'smtp-settings');

    const form = page.getByRole('form', { name: 'Create an SMTP credential' });
    await form.getByLabel('Description').fill('grafana');
    await form.getByLabel('Environment').selectOption('test');
    await form.getByRole('button', { name: 'Create credential' }).click();
    const secretBox = page.locator('[data-secret]');
    await secretBox.waitFor();
    const secret = (await secretBox.textContent())!.trim();
    const username = (await page.locator('[data-username]').textContent())!.trim();
    t.match(secret, /^sp_test_/, 'the secret is shown');
    t.match(username, /^smtp_[a-z0-9]{20}$/, 'and the user name');
    await checkPage(t, page, 'smtp-secret-once');

    t.match(await login(username, secret), [235], 'the new credential authenticates at once');

    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.reload();
    const row = page.getByRole('row', { name: /grafana/ });
    await row.waitFor();
    const rowText = (await row.textContent())!;
    t.match(rowText, username, 'the list shows the user name');
    t.match(rowText, /test/, 'and the environment');
    t.notOk((await page.content()).includes(secret), 'no secret after a reload');
    t.equal(await page.locator('[data-secret]').count(), 0, 'no secret box after a reload');
    const lastUsed = row.locator('td').nth(4).locator('time');
    t.equal(await lastUsed.getAttribute('datetime'), daemon.clock.now().toISOString(), 'last use is shown');

    await page.getByRole('button', { name: 'Revoke grafana' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await checkPage(t, page, 'smtp-revoke-confirm');
    await dialog.getByRole('button', { name: 'Revoke', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page
      .getByRole('row', { name: /grafana/ })
      .getByRole('button')
      .waitFor({ state: 'detached' });
    t.match(await login(username, secret), [535], 'the revoked credential fails AUTH');
    const audit = await daemon.app.audit.list({ limit: 100 });
    t.ok(
      audit.data.some((e) => e.action === 'smtp-credential.revoke') && audit.data.some((e) => e.action === 'smtp-credential.create'),
      'creation and revocation are in the audit log',
    );
  });

  t.test(`with submission off, the page says how to turn it on (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.goto(`${daemon.url}/dashboard/smtp`);
    const settings = page.getByRole('region', { name: 'Settings to copy' });
    await settings.getByText('SMTP submission is off on this box').waitFor();
    t.match(await settings.textContent(), /POSTERN_SUBMISSION_ENABLED=true/);
    t.equal(await settings.getByText('Port (STARTTLS)').count(), 0, 'no ports to copy');
    await checkPage(t, page, 'smtp-off');

    // The JSON routes the page calls: a session with its CSRF token, bad input a 4xx in the envelope.
    const owner = await dashboardLogin(daemon);
    const ws = await daemon.app.workspaces.bySlug('acme');
    await owner.select(ws.id, 'live');
    const settings0 = await owner.request('GET', '/dashboard/api/smtp/settings');
    t.match(settings0.body, { enabled: false, host: 'mx.postern.test', starttlsPort: null, tlsPort: null, usernames: ['apikey', 'acme'] });
    const badEnv = await owner.request('POST', '/dashboard/api/smtp/credentials', { env: 'staging' });
    t.equal(badEnv.status, 422);
    t.match(badEnv.body, { error: { code: 'invalid_body' } });
    const noCsrf = await owner.request('POST', '/dashboard/api/smtp/credentials', { env: 'live' }, { 'x-csrf-token': 'guessed' });
    t.equal(noCsrf.status, 403, 'a wrong CSRF token is refused');
    t.same((await owner.request('GET', '/dashboard/api/smtp/credentials')).body, { data: [] }, 'nothing was created');
    const missing = await owner.request('POST', '/dashboard/api/smtp/credentials/smc_nothere/revoke');
    t.equal(missing.status, 404);
    // A credential of another workspace cannot be revoked from this one.
    const other = await daemon.workspace('other');
    const foreign = await daemon.app.smtpCredentials.create({ id: other.id }, { env: 'live' });
    const cross = await owner.request('POST', `/dashboard/api/smtp/credentials/${foreign.credential.id}/revoke`);
    t.equal(cross.status, 404, "another workspace's credential is not found");
    t.equal((await daemon.app.smtpCredentials.list(other.id))[0].revokedAt, null, 'and stays unrevoked');
  });
}
