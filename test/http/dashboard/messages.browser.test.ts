// The Messages pages in a real browser, on test-mode messages sent with an API key (the test
// channel's simulated recipients: failed@…, deferred@… deferred once, then delivered): filters
// narrow the list and stay in the URL over a reload, paging goes older and newer, the live tail
// shows a message sent after the toggle, the detail shows the timeline and the sandboxed preview,
// a scheduled message is canceled and a deferred one retried now.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

const dispatcher = (d: TestDaemon) => d.app.workers.find((w) => w.name === 'dispatcher')!;

for (const db of testDatabases()) {
  t.test(`messages pages (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const send = async (to: string, extra: Record<string, unknown> = {}) => {
      const r = await d.request('POST', '/v1/send', {
        key: ws.test,
        body: { to, channel: 'email', content: { subject: `Hello ${to}`, text: `Text for ${to}`, html: `<h1>Hi ${to}</h1>` }, ...extra },
      });
      t.equal(r.status, 202);
      return r.body.id as string;
    };
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await send(`user${i}@example.com`, { metadata: { team: i % 2 ? 'odd' : 'even' } }));
    const failed = await send('failed@example.com');
    const deferred = await send('deferred@example.com');
    const scheduled = await send('later@example.com', { scheduledAt: new Date(d.clock.now().getTime() + 3600_000).toISOString() });
    await dispatcher(d).tick();
    await dispatcher(d).tick();
    const status = async (id: string) => (await d.request('GET', `/v1/messages/${id}`, { key: ws.test })).body.status as string;
    t.equal(await status(failed), 'failed');
    t.equal(await status(deferred), 'dispatched');

    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, d);
    await page.getByRole('group', { name: 'Environment' }).getByRole('button', { name: 'test' }).click();
    await page.getByRole('link', { name: 'Messages' }).first().click();
    const rows = page.locator('table tbody tr');
    await page.getByRole('link', { name: failed }).waitFor();
    t.equal(await rows.count(), 11, 'every message on the first page');
    await checkPage(t, page, 'messages-list');

    t.test('filters narrow the list and survive a reload', async (t) => {
      await page.getByLabel('Status').selectOption('failed');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.waitForURL(/status=failed/);
      await page.getByRole('link', { name: ids[0] }).waitFor({ state: 'detached' });
      t.equal(await rows.count(), 1);
      t.equal(await rows.first().getByRole('link').textContent(), failed);
      await page.reload();
      await page.getByRole('link', { name: failed }).waitFor();
      t.equal(await rows.count(), 1);
      t.equal(await page.getByLabel('Status').inputValue(), 'failed');

      // The list shows the deferred message as deferred, and the filter of that name finds it alone.
      await page.goto(`${d.url}/dashboard/messages`);
      await page
        .getByRole('row', { name: new RegExp(deferred) })
        .locator('.badge', { hasText: 'deferred' })
        .waitFor();
      await page.getByLabel('Status').selectOption('deferred');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.waitForURL(/status=deferred/);
      await page.getByRole('link', { name: failed }).waitFor({ state: 'detached' });
      t.equal(await rows.count(), 1, 'status=deferred: the deferred message only');
      t.equal(await rows.first().getByRole('link').textContent(), deferred);

      await page.goto(`${d.url}/dashboard/messages?metadata%5Bteam%5D=odd`);
      await page.getByRole('link', { name: ids[1] }).waitFor();
      t.equal(await rows.count(), 4, 'metadata[team]=odd');
      await page.getByLabel('Search').fill('user3');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.waitForURL(/q=user3/);
      await page.getByRole('link', { name: ids[1] }).waitFor({ state: 'detached' });
      t.equal(await rows.count(), 1, 'search and metadata together');
    });

    t.test('paging goes older and back newer', async (t) => {
      await page.goto(`${d.url}/dashboard/messages?limit=10`);
      await page.getByRole('link', { name: scheduled }).waitFor();
      t.equal(await rows.count(), 10);
      await page.getByRole('button', { name: 'Older →' }).click();
      await page.getByRole('link', { name: ids[0] }).waitFor();
      t.equal(await rows.count(), 1, 'the oldest on page two');
      await page.getByRole('button', { name: '← Newer' }).click();
      await page.getByRole('link', { name: scheduled }).waitFor();
      t.equal(await rows.count(), 10);
    });

    t.test('the live tail shows a message sent after the toggle', async (t) => {
      await page.goto(`${d.url}/dashboard/messages`);
      await page.getByRole('checkbox', { name: 'Live tail' }).check();
      await page.locator('#tail-title .badge', { hasText: 'live' }).waitFor();
      const fresh = await send('fresh@example.com');
      await page.getByRole('link', { name: fresh }).waitFor();
      t.equal(await rows.first().getByRole('link').textContent(), fresh, 'on top');
      await checkPage(t, page, 'messages-tail');
      await page.getByRole('checkbox', { name: 'Live tail' }).uncheck();
    });

    t.test('detail: timeline and preview', async (t) => {
      await page.goto(`${d.url}/dashboard/messages/${ids[2]}`);
      await page.getByRole('heading', { name: `Message ${ids[2]}` }).waitFor();
      await page.locator('.timeline').getByText('delivered').waitFor();
      const frame = page.frameLocator('iframe.preview-frame');
      await frame.getByRole('heading', { name: 'Hi user2@example.com' }).waitFor();
      const sandbox = await page.locator('iframe.preview-frame').getAttribute('sandbox');
      t.equal(sandbox, 'allow-popups allow-popups-to-escape-sandbox');
      await checkPage(t, page, 'message-detail');
      await page.getByRole('button', { name: 'Mobile' }).click();
      t.match(await page.locator('iframe.preview-frame').getAttribute('class'), /mobile/);
      await page.getByRole('tab', { name: 'Text' }).click();
      await page.getByText('Text for user2@example.com').waitFor();
      await page.getByRole('tab', { name: 'Headers' }).click();
      await page.getByRole('cell', { name: 'Subject' }).waitFor();
      await page.getByRole('tab', { name: 'Source' }).click();
      await page.getByText(/Message-ID: <msg_/).waitFor();
      t.equal(
        await page.getByRole('link', { name: 'Download .eml' }).getAttribute('href'),
        `/dashboard/view/messages/${ids[2]}/source.eml`,
      );
      await checkPage(t, page, 'message-detail-source');
    });

    t.test('cancel a scheduled message', async (t) => {
      await page.goto(`${d.url}/dashboard/messages/${scheduled}`);
      await page.getByRole('button', { name: 'Cancel message' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel message' }).click();
      await page.getByText('Canceled.').waitFor();
      t.equal(await status(scheduled), 'canceled');
    });

    t.test('retry a deferred message now', async (t) => {
      await page.goto(`${d.url}/dashboard/messages/${deferred}`);
      await page.locator('.facts .badge', { hasText: 'deferred' }).waitFor();
      await page.getByRole('button', { name: 'Retry now' }).click();
      await page.getByText('Retry requested').first().waitFor();
      await page.locator('.timeline').getByText('retry requested').waitFor();
      await dispatcher(d).tick();
      t.equal(await status(deferred), 'delivered');
    });
  });
}
