// Destinations in the browser: the workspace's destination domains with their counts, last error
// and standing; the adaptive back-off of one that throttles (its lowered rate, connections and last
// answer); suspend and resume one; the operator's hold for everyone shown as such; purge with
// confirmation.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { startSink } from '../../helpers/smtp-sink.js';

for (const db of testDatabases()) {
  t.test(`destinations: counts, suspend, resume, the operator’s hold, purge (${db})`, async (t) => {
    const sink = await startSink(t, {
      rcpt: (a) =>
        a.startsWith('gone@')
          ? { code: 550, message: '5.1.1 no such user' }
          : a.endsWith('@slow.example')
            ? { code: 421, message: '4.7.0 Try again later, closing connection.' }
            : undefined,
    });
    const zone: Parameters<typeof startDnsServer>[0] = { 'mx.example.net': [{ type: 'A', data: '127.0.0.1' }] };
    for (const d of ['good.example', 'blocked.example', 'slow.example'])
      zone[d] = [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }];
    const dns = await startDnsServer(zone);
    t.teardown(() => dns.close());
    const daemon = await bootDaemon(t, {
      db,
      env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(sink.port), POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms' },
    });
    const ws = await daemon.workspace('acme');
    for (const to of ['a@good.example', 'gone@good.example', 'b@blocked.example', 's@slow.example']) {
      const r = await daemon.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      t.equal(r.status, 202);
    }
    await daemon.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    await daemon.app.destinations.flush();

    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.getByRole('link', { name: 'Destinations' }).click();
    const good = page.getByRole('row', { name: /good\.example/ });
    await good.waitFor();
    t.match(await good.innerText(), /good\.example\s+1\s+0\s+1\s+unknown_user .*550 5\.1\.1 no such user/s, 'counts and the last error');
    await checkPage(t, page, 'destinations-list');

    // A destination that throttled: sent to slower (half the rate it climbs back to, 2 of 5 connections).
    const slow = page.getByRole('row', { name: /slow\.example/ });
    t.match(
      await slow.innerText(),
      /slowed down\s+5\/min of 10\/min, 2 connections per host, since .*Last answer \(1 in all\): mx\.example\.net: 421 4\.7\.0 Try again later/s,
      'the lowered rate, connections and the last throttling answer',
    );
    t.match(await good.innerText(), /full speed/, 'a destination that never throttled goes at full speed');

    // Suspend, then resume, the workspace's own mail to a domain.
    await page.getByRole('button', { name: 'Suspend good.example' }).click();
    await good.getByText('suspended', { exact: true }).waitFor();
    t.match((await daemon.request('GET', '/v1/destinations/good.example', { key: ws.live })).body, { suspended: 'workspace' });
    await page.getByRole('button', { name: 'Resume good.example' }).click();
    await good.getByText('open', { exact: true }).waitFor();

    // The operator's hold for every workspace.
    t.equal((await daemon.cli('queue', 'suspend', 'blocked.example')).code, 0);
    await page.reload();
    await page
      .getByRole('row', { name: /blocked\.example/ })
      .getByText('suspended by the operator')
      .waitFor();

    // Suspend by name, then purge what waits, with confirmation.
    const form = page.getByRole('form', { name: 'Suspend a destination' });
    await form.getByLabel('Domain').fill('good.example');
    await form.getByLabel('Reason (optional)').fill('listed at a blocklist');
    await form.getByRole('button', { name: 'Suspend' }).click();
    await good.getByText('suspended', { exact: true }).waitFor();
    const held = await daemon.request('POST', '/v1/send-raw', {
      key: ws.live,
      body: { to: 'c@good.example', channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
    });
    await daemon.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    t.match((await daemon.request('GET', `/v1/messages/${held.body.id}`, { key: ws.live })).body, {
      status: 'dispatched',
      error: /suspended \(listed at a blocklist\)/,
    });
    await page.getByRole('button', { name: 'Purge good.example' }).click();
    await checkPage(t, page, 'destinations-purge-confirm');
    await page.getByRole('dialog').getByRole('button', { name: 'Purge' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    t.match((await daemon.request('GET', `/v1/messages/${held.body.id}`, { key: ws.live })).body, { status: 'failed', error: /^purged: / });
  });
}
