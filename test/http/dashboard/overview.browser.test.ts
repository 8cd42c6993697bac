// The Overview page in a real browser: test-mode messages sent with an API key reach delivered
// and failed through the test channel, and the page shows those figures, the queue, the plan
// meters and the chart.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

const dispatcher = (d: TestDaemon) => d.app.workers.find((w) => w.name === 'dispatcher')!;

for (const db of testDatabases()) {
  t.test(`overview page (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const send = async (to: string, extra: Record<string, unknown> = {}) => {
      const r = await d.request('POST', '/v1/send', {
        key: ws.test,
        body: { to, channel: 'email', content: { subject: 'Hi', text: 'x' }, ...extra },
      });
      t.equal(r.status, 202);
    };
    for (const to of ['a@example.com', 'b@example.com', 'c@example.com', 'failed@example.com', 'deferred@example.com']) await send(to);
    await send('later@example.com', { scheduledAt: new Date(d.clock.now().getTime() + 3600_000).toISOString() });
    await dispatcher(d).tick();
    await dispatcher(d).tick();

    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, d);
    await page.getByRole('group', { name: 'Environment' }).getByRole('button', { name: 'test' }).click();
    const figure = (name: string) => page.locator(`tr[data-figure="${name}"] td`);
    await figure('delivered').first().filter({ hasText: '3' }).waitFor();
    t.same(await figure('delivered').allTextContents(), ['3', '3']);
    t.same(await figure('failed').allTextContents(), ['1', '1']);
    t.same(await figure('deferred').allTextContents(), ['1', '1']);
    t.same(await figure('bounceRate').allTextContents(), ['25.0%', '25.0%']);
    const queue = page.getByRole('region', { name: 'Queue' });
    t.equal(await queue.locator('.fact', { hasText: 'Scheduled' }).locator('dd').textContent(), '1');
    t.equal(await queue.locator('.fact', { hasText: 'Deferred' }).locator('dd').textContent(), '1');
    t.equal((await page.locator('svg.chart rect').count()) > 0, true, 'the chart has bars');
    await page.getByRole('img', { name: /Live messages this month: 0 of 500/ }).waitFor();
    await checkPage(t, page, 'overview');
  });
}
