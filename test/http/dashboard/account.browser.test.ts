// The second factor in Chromium: an owner sets up an authenticator app from the QR code the page
// draws (read back from a screenshot with jsQR, as a phone's camera would), types the app's code
// (otplib on the daemon's clock), keeps the recovery codes, requires a second factor of every
// operator, then signs in with a code and with a recovery code; a member without an app sees only
// the page that sets one up.
import jsqr from 'jsqr';
import { authenticator } from 'otplib';
import { PNG } from 'pngjs';
import type { Page } from 'playwright-core';
import t from 'tap';
import { checkPage, launchBrowser, loggedIn, OWNER } from '../../helpers/browser.js';
import { bootDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

const MEMBER = { email: 'member@postern.test', password: 'another long password' };
const STEP = 30_000;

// jsQR is CommonJS whose types say `export default`: the function is the module itself at run time.
const jsQR: typeof jsqr.default = typeof jsqr === 'function' ? jsqr : jsqr.default;

const appCode = (daemon: TestDaemon, secret: string) => authenticator.clone({ epoch: daemon.clock.now().getTime() }).generate(secret);

/** What the QR code on the page says, read from its pixels. */
async function readQr(page: Page): Promise<string> {
  const png = PNG.sync.read(await page.getByRole('img', { name: 'QR code of the authenticator key' }).screenshot());
  const found = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
  if (!found) throw new Error('no QR code found in the picture');
  return found.data;
}

async function logIn(page: Page, daemon: TestDaemon, who: { email: string; password: string }) {
  await page.goto(`${daemon.url}/dashboard/`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

for (const db of testDatabases()) {
  t.test(`an owner sets up an app, requires one of all, and signs in with it (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    const ws = await daemon.workspace('acme');
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);

    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { name: 'Second factor' }).waitFor();
    await page.getByText('Off: the password alone signs you in').waitFor();
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const form = page.getByRole('form', { name: 'Set up an authenticator app' });
    await form.waitFor();
    await checkPage(t, page, 'account-set-up');
    const uri = new URL(await readQr(page));
    t.equal(uri.protocol, 'otpauth:', 'the QR code is a key URI');
    t.equal(decodeURIComponent(uri.pathname), `/Postern:${OWNER.email}`, 'naming the box and the operator');
    const secret = uri.searchParams.get('secret')!;
    t.equal((await page.locator('[data-totp-key]').textContent())!.replace(/\s/g, ''), secret, 'the key to type is the same');

    await form.getByLabel('Code from the app').fill('000000');
    await form.getByRole('button', { name: 'Turn on' }).click();
    await form.getByText('wrong or expired code').waitFor();
    await form.getByLabel('Code from the app').fill(appCode(daemon, secret));
    await form.getByRole('button', { name: 'Turn on' }).click();
    const codesBox = page.getByRole('region', { name: 'Recovery codes' });
    await codesBox.waitFor();
    const codes = (await codesBox.locator('li').allTextContents()).map((c) => c.trim());
    t.equal(codes.length, 10, 'ten recovery codes, shown once');
    await checkPage(t, page, 'account-recovery-codes');
    await page.getByRole('button', { name: 'I have saved them' }).click();
    await page.getByText('On: you sign in with a code from your authenticator app. 10 of 10').waitFor();
    t.equal(await page.locator('[data-secret]').count(), 0, 'the codes are gone once saved');

    // The rule, on the owners' page.
    await page.getByRole('link', { name: 'Workspaces & operators' }).click();
    const rule = page.getByRole('checkbox', { name: /Require a second factor of every operator/ });
    await rule.click(); // the box shows what the server answered, so it turns on once stored
    await page.getByRole('checkbox', { name: /Require a second factor of every operator/, checked: true }).waitFor();
    await page.reload();
    await page.getByRole('checkbox', { name: /Require a second factor of every operator/, checked: true }).waitFor();
    t.ok(await daemon.app.factors.required(), 'stored');
    await page
      .getByRole('row', { name: new RegExp(OWNER.email) })
      .getByText('app')
      .waitFor();

    // Signing in again: the code is asked for after the password.
    await page.getByRole('button', { name: 'Log out' }).click();
    await logIn(page, daemon, OWNER);
    const codeField = page.getByLabel('Authentication code');
    await codeField.waitFor();
    await checkPage(t, page, 'login-second-factor');
    daemon.clock.advance(STEP); // the confirming code's step is spent
    await codeField.fill(appCode(daemon, secret));
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByText('password and authenticator app').waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await logIn(page, daemon, OWNER);
    await page.getByLabel('Authentication code').waitFor();
    await page.getByRole('button', { name: 'Use a recovery code instead' }).click();
    await page.getByLabel('Recovery code').fill(codes[3]);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByText('9 of 10 recovery codes left').waitFor();

    // A member without an app: only the page that sets one up opens.
    await daemon.app.operators.create({ ...MEMBER, role: 'member', workspaces: [ws.id] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    t.teardown(() => context.close());
    const other = await context.newPage();
    other.on('pageerror', (err) => t.fail(`error in the page: ${err.message}`));
    await logIn(other, daemon, MEMBER);
    await other.getByText('This box requires a second factor of every operator').waitFor();
    await other.getByRole('link', { name: 'Messages' }).click();
    await other.getByRole('button', { name: 'Set up an authenticator app' }).waitFor();
    t.equal(await other.getByRole('heading', { name: 'Messages' }).count(), 0, 'the messages page does not open');
    await checkPage(t, other, 'account-must-set-up');
    await other.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const memberSecret = new URL(await readQr(other)).searchParams.get('secret')!;
    await other.getByLabel('Code from the app').fill(appCode(daemon, memberSecret));
    await other.getByRole('button', { name: 'Turn on' }).click();
    await other.getByRole('button', { name: 'I have saved them' }).click();
    await other.getByRole('link', { name: 'Messages' }).click();
    await other.getByRole('heading', { name: 'Messages' }).waitFor();
    t.pass('once set up, every page opens');
  });
}
