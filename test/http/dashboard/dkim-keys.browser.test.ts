// A sending domain's DKIM keys on its page in a real browser: the active key, a rotation started
// from the page (the new records to publish, copyable, and a notice that signing waits for them),
// then, once the records are on the loopback DNS server and the page re-checks, the new keys
// active and the old one kept through the overlap.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { setup } from '../../helpers/inbound.js';
import { testDatabases } from '../../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`rotating a domain's DKIM key from its page (${db})`, async (t) => {
    const { d, dns, ws } = await setup(t, { db });
    const claimed = await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'example.com' } });
    t.equal(claimed.status, 201);
    const dkim = claimed.body.records.find((r: { check: string }) => r.check === 'dkim');
    dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
    t.equal((await d.request('GET', `/v1/inbound/domains/${claimed.body.id}`, { key: ws.live })).body.sending.verified, true);

    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, d);
    await page.goto(`${d.url}/dashboard/inbound/domains/${claimed.body.id}`);
    const keys = page.getByRole('table', { name: 'DKIM keys and their records' });
    const row = (selector: string) => keys.getByRole('row').filter({ has: page.getByRole('cell', { name: selector, exact: true }) });
    await row('postern').waitFor();
    t.match(await row('postern').textContent(), /RSA 2048.*active.*keep/);

    await page.getByRole('button', { name: 'Rotate DKIM key' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate' }).click();
    await page.getByText(/Publish the new records below: example\.com keeps signing with its current key/).waitFor();
    const day = d.clock.now().toISOString().slice(0, 10).replace(/-/g, '');
    const rsa = `postern-${day}-rsa`;
    const ed = `postern-${day}-ed25519`;
    await row(rsa).waitFor();
    t.match(await row(rsa).textContent(), /RSA 2048.*pending.*publish/);
    t.match(await row(ed).textContent(), /Ed25519.*pending.*publish.*k=ed25519/);
    t.equal(await page.getByRole('button', { name: 'Rotate DKIM key' }).count(), 0, 'one rotation at a time');
    t.equal(await page.getByRole('button', { name: /^Copy DKIM record (name|value) / }).count(), 6);
    await checkPage(t, page, 'inbound-domain-dkim-rotation');

    const view = (await d.request('GET', `/v1/inbound/domains/${claimed.body.id}`, { key: ws.live })).body;
    for (const k of view.dkim.keys.filter((k: { action: string }) => k.action === 'publish'))
      dns.set(k.name, [{ type: 'TXT', data: k.value }]);
    await page.getByRole('button', { name: 'Re-check now' }).click();
    await row('postern').getByText('retiring').waitFor();
    t.match(await row('postern').textContent(), /retiring.*keep until/);
    t.match(await row(rsa).textContent(), /active.*keep/);
    t.match(await row(ed).textContent(), /active.*keep/);
    await page.getByRole('button', { name: 'Rotate DKIM key' }).waitFor();
  });
}
