// The checks of a message on its dashboard page, in a real browser: a test-key message's checklist
// loads with the page (HTML compatibility naming display:flex, a broken link, the headers, the
// spam check skipped without rspamd) and runs again with its button; a live message is checked
// when asked.
import http from 'node:http';
import type net from 'node:net';
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';

for (const db of testDatabases()) {
  t.test(`the checklist on the message page (${db})`, async (t) => {
    let missing = 404;
    const site = http.createServer((req, res) => res.writeHead(req.url === '/ok' ? 200 : missing).end());
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())));
    const port = (site.address() as net.AddressInfo).port;
    const dns = await startDnsServer({ 'links.example': [{ type: 'A', data: '127.0.0.1' }] });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, { db, env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_CHECKS_LINKS_ALLOW_PRIVATE: 'true' } });
    const ws = await d.workspace('acme');
    const send = async (key: string) => {
      const html = `<div style="display:flex"><a href="http://links.example:${port}/ok">ok</a> <a href="http://links.example:${port}/gone">gone</a></div>`;
      const r = await d.request('POST', '/v1/send', {
        key,
        body: {
          to: 'ann@example.com',
          channel: 'email',
          scheduledAt: new Date(d.clock.now().getTime() + 3600_000).toISOString(),
          content: { subject: 'Hi', html },
        },
      });
      t.equal(r.status, 202);
      return r.body.id as string;
    };
    const test = await send(ws.test);
    const live = await send(ws.live);
    await d.app.workers.find((w) => w.name === 'message-checks')!.tick();
    const checked = await d.app.db
      .selectFrom('message_checks')
      .innerJoin('messages', 'messages.id', 'message_checks.message_id')
      .select('public_id')
      .execute();
    t.same(
      checked.map((r) => r.public_id),
      [test],
      'only the test-key message is checked on its own',
    );

    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, d);
    await page.getByRole('group', { name: 'Environment' }).getByRole('button', { name: 'test' }).click();
    await page.goto(`${d.url}/dashboard/messages/${test}`);
    const list = page.getByRole('list', { name: 'Checklist' });
    await list.waitFor();
    const item = (name: string) => list.locator(`li[data-check="${name}"]`);
    t.equal(await list.locator(':scope > li').count(), 4, 'four checks');
    t.match(await item('HTML compatibility').textContent(), /warn/);
    t.match(await item('Links').textContent(), /fail.*1 ok, 1 broken/);
    t.match(await item('Spam score').textContent(), /skipped.*no rspamd configured/);
    t.match(await item('Headers').textContent(), /DKIM-Signature: not signed/);
    t.match(await page.getByText('Checked after accept').textContent(), /Checked after accept/);
    await item('HTML compatibility').getByText('Details').click();
    await item('HTML compatibility').getByRole('link', { name: 'display:flex' }).waitFor();
    await item('Links').getByText('Details').click();
    await item('Links').getByText('404').waitFor();
    await checkPage(t, page, 'message-checks');

    // Check again: the link mended, the checklist says so.
    missing = 200;
    await page.getByRole('button', { name: 'Check again' }).click();
    await page.getByText('Checked on demand').waitFor();
    t.match(await item('Links').textContent(), /pass.*2 ok, 0 broken/);

    // A live message is checked when asked.
    await page.getByRole('group', { name: 'Environment' }).getByRole('button', { name: 'live' }).click();
    await page.goto(`${d.url}/dashboard/messages/${live}`);
    await page.getByRole('button', { name: 'Check this message' }).click();
    await list.waitFor();
    t.match(await item('Links').textContent(), /2 ok/);
  });
}
