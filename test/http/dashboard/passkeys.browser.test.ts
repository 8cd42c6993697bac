// Passkeys in Chromium, with the DevTools virtual authenticator (WebAuthn.addVirtualAuthenticator:
// a platform authenticator that keeps discoverable credentials and verifies its user): an owner
// adds a passkey on the Account page and signs in with it alone; a signed answer is good once; the
// box's rule then refuses that owner's password alone; a removed passkey no longer signs in. The
// page is opened on localhost: a passkey's RP ID is a host name, never an IP address.
import type { CDPSession, Page } from 'playwright-core';
import t from 'tap';
import { checkPage, ensureOwner, launchBrowser, OWNER, virtualAuthenticator } from '../../helpers/browser.js';
import { bootDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

async function logIn(page: Page, base: string, who: { email: string; password: string }) {
  await page.goto(`${base}/dashboard/`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

async function credentials(cdp: CDPSession, authenticatorId: string) {
  return (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
}

const rawPost = (daemon: TestDaemon, path: string, body: string) =>
  fetch(`${daemon.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => ({
    status: r.status,
    body: (await r.json()) as any,
  }));

for (const db of testDatabases()) {
  t.test(`a passkey added in the browser signs in on its own (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    await ensureOwner(daemon);
    const base = `http://localhost:${daemon.httpPort}`;
    const browser = await launchBrowser(t);
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.on('pageerror', (err) => t.fail(`error in the page: ${err.message}`));
    const { cdp, authenticatorId } = await virtualAuthenticator(context, page);

    await logIn(page, base, OWNER);
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByText('No passkey yet.').waitFor();
    const add = page.getByRole('form', { name: 'Add a passkey' });
    await add.getByLabel('Passkey name').fill('work laptop');
    await add.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('row', { name: /work laptop/ }).waitFor();
    await checkPage(t, page, 'account-passkeys');
    const made = await credentials(cdp, authenticatorId);
    t.equal(made.length, 1, 'the authenticator made one credential');
    t.equal(made[0].rpId, 'localhost', 'bound to the host name the page is on');
    t.ok(made[0].isResidentCredential, 'discoverable: it signs in without the email');
    const stored = await daemon.app.db.selectFrom('operator_passkeys').selectAll().execute();
    t.same(
      stored.map((s) => [s.id, s.name]),
      [[Buffer.from(made[0].credentialId, 'base64').toString('base64url'), 'work laptop']],
      'the same credential is stored, under its name',
    );
    t.ok(await daemon.app.factors.enrolled(stored[0].operator_id), 'a passkey is a second factor for the rule');

    // The same authenticator cannot be added twice (its credential is excluded).
    await add.getByLabel('Passkey name').fill('again');
    await add.getByRole('button', { name: 'Add a passkey' }).click();
    await add.locator('.error').waitFor();
    t.equal((await credentials(cdp, authenticatorId)).length, 1, 'no second credential on the same authenticator');

    // Sign in with it alone; keep the signed answer to replay it.
    let signed = '';
    page.on('request', (req) => {
      if (req.url().endsWith('/dashboard/api/login/passkey')) signed = req.postData() ?? '';
    });
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByText('a passkey', { exact: true }).waitFor();
    t.ok(signed, 'the page sent the authenticator’s answer');
    const replay = await rawPost(daemon, '/dashboard/api/login/passkey', signed);
    t.equal(replay.status, 401, 'a signed answer is good once');
    t.match(replay.body.error.message, /expired or was already used/);
    const garbage = await rawPost(daemon, '/dashboard/api/login/passkey', JSON.stringify({ response: { id: 'x' } }));
    t.equal(garbage.status, 422, 'what is not a credential is refused as such');
    const audit = await daemon.app.audit.list({ operator: OWNER.email });
    t.ok(
      audit.data.some((e) => e.action === 'session.login' && e.target === 'passkey' && e.outcome === 'ok'),
      'the audit log names the passkey sign-in',
    );
    t.ok(
      audit.data.some((e) => e.action === 'passkey.add' && e.target === 'work laptop'),
      'and the passkey added',
    );

    // The rule: this owner's second factor is a passkey, so the password alone no longer signs in.
    await daemon.app.factors.setRequired(true);
    await page.getByRole('button', { name: 'Log out' }).click();
    await logIn(page, base, OWNER);
    await page.getByText('yours is a passkey: sign in with the passkey').waitFor();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    await daemon.app.factors.setRequired(false);

    // Removed: the authenticator still holds it, but it signs in no more.
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('button', { name: 'Remove the passkey work laptop' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove', exact: true }).click();
    await page.getByText('No passkey yet.').waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByText('it is not registered here').waitFor();
    t.equal(await page.getByRole('navigation', { name: 'Dashboard' }).count(), 0, 'still on the login page');
  });
}
