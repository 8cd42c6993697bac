// The Templates pages in a real browser: create a template, edit its draft, watch the live
// preview follow the sample variables, publish, edit and publish again, diff v1 and v2, and send a
// test that lands in the test environment.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { until } from '../../helpers/until.js';
import { testDatabases } from '../../helpers/databases.js';

/** A loopback HTTP server that records the requests for its images. */
async function pixelServer(t: { teardown(fn: () => unknown): void }) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(Buffer.from('89504e470d0a1a0a', 'hex'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return { port: (server.address() as AddressInfo).port, hits };
}

for (const db of testDatabases()) {
  t.test(`an operator creates, previews, publishes, diffs and test-sends a template (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    const ws = await daemon.workspace('acme');
    const pixel = await pixelServer(t);
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);

    await page.getByRole('link', { name: 'Templates' }).click();
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
    await page.getByLabel('Slug').fill('welcome');
    await page.getByLabel('Channel').selectOption('email');
    await page.getByLabel('Description').fill('First mail after sign-up');
    await page.getByRole('button', { name: 'Create template' }).click();
    await page.getByRole('heading', { name: 'Template welcome', level: 1 }).waitFor();

    await page.getByLabel('Subject').fill('Welcome, {{name}}');
    const logo = `<img alt="logo" src="http://127.0.0.1:${pixel.port}/logo.png">`;
    await page.getByLabel('HTML body').fill(`<h1>Hello {{name}}</h1>\n<p>Thanks for joining {{team}}.</p>\n<p>See you soon.</p>\n${logo}`);
    await page.getByRole('button', { name: 'Add variable' }).click();
    await page.getByLabel('Name', { exact: true }).fill('name');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByText('Draft saved').waitFor();

    // The preview renders the saved draft; the sample variables change it as they are typed.
    const frame = page.frameLocator('iframe[title="Email HTML preview"]');
    await frame.getByRole('heading', { name: 'Hello name' }).waitFor();
    await page.getByLabel('Sample variables (JSON)').fill('{"name": "Ada", "team": "Acme"}');
    await frame.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    await page.locator('[data-preview]').getByText('Welcome, Ada').waitFor();
    t.ok(await frame.getByText('Thanks for joining Acme.').isVisible(), 'the body follows the sample variables');
    await checkPage(t, page, 'templates-editor');

    // Remote images wait for a click, as in received mail: the preview's CSP blocks them, so the
    // logo's server hears nothing until "Load remote content".
    t.equal(await frame.getByRole('img', { name: 'logo' }).count(), 1, 'the image element is there');
    t.equal(pixel.hits.length, 0, 'the remote image was not fetched on open');
    await page.getByRole('button', { name: 'Load remote content' }).click();
    await page.getByText('Remote content loaded.').waitFor();
    await frame.getByRole('heading', { name: 'Hello Ada' }).waitFor();
    t.ok(await until('the remote image to be fetched', () => pixel.hits.length > 0), 'the remote image is fetched once asked');
    t.match(pixel.hits[0], '/logo.png');

    await page.getByRole('button', { name: 'Publish draft v1' }).click();
    await page.getByRole('button', { name: 'Nothing to publish' }).waitFor();

    // Edit again: a new draft v2, published.
    await page
      .getByLabel('HTML body')
      .fill(`<h1>Hello {{name}}</h1>\n<p>Thanks for joining {{team}}, truly.</p>\n<p>See you soon.</p>\n${logo}`);
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('button', { name: 'Publish draft v2' }).click();
    await page.getByRole('button', { name: 'Nothing to publish' }).waitFor();

    await page.getByRole('tab', { name: 'Versions' }).click();
    await page.getByLabel('From version').selectOption('1');
    await page.getByLabel('To version').selectOption('2');
    const diff = page.getByLabel('Diff from v1 to v2');
    await diff.waitFor();
    t.same(
      await diff.locator('[data-kind="del"]').allTextContents(),
      ['- <p>Thanks for joining {{team}}.</p>\n'],
      'v1 side: the changed line only',
    );
    t.same(await diff.locator('[data-kind="add"]').allTextContents(), ['+ <p>Thanks for joining {{team}}, truly.</p>\n']);
    await checkPage(t, page, 'templates-diff');

    await page.getByRole('tab', { name: 'Send a test' }).click();
    await page.getByLabel('Recipient').fill('ada@example.com');
    await page.getByRole('button', { name: 'Send test' }).click();
    const notice = page.getByText(/Test message msg_/);
    await notice.waitFor();
    const id = (await notice.locator('code').textContent())!;
    const msg = await daemon.request('GET', `/v1/messages/${id}`, { key: ws.test });
    t.equal(msg.status, 200, 'the test message exists in the test environment');
    t.equal(msg.body.livemode, false);
    const list = await daemon.request('GET', '/v1/messages', { key: ws.test });
    t.ok(
      list.body.data.some((m: { publicId: string; templateSlug: string }) => m.publicId === id && m.templateSlug === 'welcome'),
      'GET /v1/messages with a test key lists it',
    );

    await page.getByRole('link', { name: 'Templates' }).first().click();
    await page.getByRole('link', { name: 'welcome' }).waitFor();
    await checkPage(t, page, 'templates-list');
  });
}
