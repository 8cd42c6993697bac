// Sources & warm-up in the browser: an owner sees the source addresses with their EHLO names and
// pools, who is assigned which pool, and a warm-up schedule after real sends through a loopback
// MX — today's allowance, what is used of it, the next step — and, after bounces, why the ramp is
// paused.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startRemoteMx } from '../../helpers/smtp-sink.js';
import { ManualClock } from '../../helpers/clock.js';

for (const db of testDatabases()) {
  t.test(`sources and warm-up schedules in the dashboard (${db})`, async (t) => {
    const { env } = await startRemoteMx(t, {
      rcpt: (a) => (a.startsWith('bad') ? { code: 550, message: '5.1.1 no such user' } : undefined),
    });
    const clock = new ManualClock('2026-03-02T10:00:00Z');
    const daemon = await bootDaemon(t, {
      db,
      clock,
      env: {
        ...env,
        POSTERN_DELIVERY_SOURCES: JSON.stringify({
          a: { address: '127.0.0.2', ehlo: 'a.postern.test' },
          six: { address: '::1', ehlo: 'six.postern.test' },
        }),
        POSTERN_DELIVERY_POOLS: JSON.stringify({ main: ['a', 'six'] }),
        POSTERN_DELIVERY_POOL_ASSIGNMENT: JSON.stringify({ default: 'main', workspaces: {}, domains: {} }),
        POSTERN_DELIVERY_WARM_UP_ENABLED: 'true',
        POSTERN_DELIVERY_WARM_UP_SOURCES: 'a',
        POSTERN_DELIVERY_WARM_UP_CURVE: '3,6',
        POSTERN_DELIVERY_WARM_UP_MIN_SAMPLE: '3',
      },
    });
    const ws = await daemon.workspace('acme');
    const send = async (to: string) => {
      const r = await daemon.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      t.equal(r.status, 202);
    };
    const dispatcher = daemon.app.workers.find((w) => w.name === 'dispatcher')!;
    await send('u1@example.net');
    await send('u2@example.net');
    await dispatcher.tick();

    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.getByRole('link', { name: 'Sources & warm-up' }).click();
    const source = page.getByRole('row', { name: /127\.0\.0\.2/ });
    await source.waitFor();
    t.match(await source.innerText(), /a\s+127\.0\.0\.2\s+a\.postern\.test\s+main\s+yes/);
    t.match(await page.getByRole('row', { name: /::1/ }).innerText(), /six\s+::1\s+six\.postern\.test\s+main\s+no/, 'six is not warmed up');
    t.match(await page.locator('dl').first().innerText(), /Everyone else\s+pool main/);
    const schedule = page.getByRole('row', { name: /mx\.postern\.test/ });
    t.match(
      await schedule.innerText(),
      /a\s+mx\.postern\.test\s+1 of 2\s+3\s+2\s+6 from 2026-03-03\s+2 delivered, 0 bounced, 0 deferred, 0 complaints\s+climbing/,
      "today's allowance, used, the next step",
    );
    await checkPage(t, page, 'warm-up');

    // A bounce makes one of three answers: the next message finds the ramp paused, and the page says why.
    await send('bad1@example.net');
    await dispatcher.tick();
    await send('bad2@example.net');
    await dispatcher.tick();
    await page.getByRole('button', { name: 'Refresh' }).click();
    await schedule.getByText(/paused: bounce rate 33\.3 % over 5\.0 %/).waitFor();
    t.match(await schedule.innerText(), /none while paused/, 'no next step while paused');
    await checkPage(t, page, 'warm-up-paused');
  });
}
