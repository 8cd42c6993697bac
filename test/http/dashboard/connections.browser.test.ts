// Provider connections in the browser: add an sms connection through the HTTP gateway provider
// (the form is built from its settings), see it listed without its secret — the secret appears in
// no JSON the page fetched —, and remove it.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

const SECRET = 'gateway-hmac-secret-5d1c0ffee';

for (const db of testDatabases()) {
  t.test(`add an sms connection, secret write-only, remove it (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db, env: { POSTERN_CHANNELS_ALLOW_PRIVATE: 'true' } });
    const ws = await daemon.workspace('acme');
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    const bodies: string[] = [];
    const reading: Promise<unknown>[] = [];
    page.on('response', (res) => {
      if ((res.headers()['content-type'] ?? '').includes('json'))
        reading.push(
          res.text().then(
            (b) => bodies.push(b),
            () => undefined,
          ),
        );
    });
    await page.getByRole('link', { name: 'Connections' }).click();
    await page.getByRole('row', { name: /direct to MX/ }).waitFor();
    const form = page.getByRole('form', { name: /Add a connection/ });
    await form.getByLabel('Provider').selectOption('sms/http');
    await checkPage(t, page, 'connections-form');
    await form.getByLabel('Connection name (optional)').fill('office gateway');
    await form.getByLabel('Url').fill('http://127.0.0.1:9/sms');
    t.equal(await form.getByLabel('Secret').getAttribute('type'), 'password', 'the secret is typed into a password field');
    await form.getByLabel('Secret').fill(SECRET);
    await form.getByLabel('From (optional)').fill('+15550100');
    await form.getByRole('button', { name: 'Add connection' }).click();
    const row = page.getByRole('row', { name: /office gateway/ });
    await row.waitFor();
    t.match(await row.textContent(), /url: http:\/\/127\.0\.0\.1:9\/sms/, 'non-secret settings listed');
    t.match(await row.textContent(), /secret set/, 'the secret is named as set');
    t.equal(await form.getByLabel('Secret').inputValue(), '', 'the form forgets the secret');
    t.notOk((await page.content()).includes(SECRET), 'the secret is not on the page');
    await checkPage(t, page, 'connections-list');

    const stored = await daemon.app.connections.active(ws.id, true, 'sms');
    t.equal(stored?.credentials.secret, SECRET, 'the secret reached the store (sealed)');

    await page.reload();
    await page.getByRole('row', { name: /office gateway/ }).waitFor();
    await page.getByRole('button', { name: 'Remove office gateway' }).click();
    await checkPage(t, page, 'connections-remove-confirm');
    await page.getByRole('dialog').getByRole('button', { name: 'Remove', exact: true }).click();
    await page.getByRole('row', { name: /office gateway/ }).waitFor({ state: 'detached' });
    t.equal(await daemon.app.connections.active(ws.id, true, 'sms'), null, 'removed');
    // Every JSON response the page got is read before saying none held the secret.
    await Promise.all(reading);
    t.ok(bodies.length >= 4, 'the page fetched JSON');
    t.notOk(
      bodies.some((b) => b.includes(SECRET)),
      'the secret appears in no JSON the page fetched',
    );
  });
}
