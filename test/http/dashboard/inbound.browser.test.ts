// The Inbound pages in a real browser: claim a custom domain through the existing-MX
// acknowledgement and see its records and their checks; create addresses (one catch-all) and
// deactivate one; receive hostile mail over SMTP and prove, in the browser, that its script never
// runs and its remote image is not fetched until the operator loads remote content.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { sendRaw, setup } from '../../helpers/inbound.js';
import { until } from '../../helpers/until.js';
import { testDatabases } from '../../helpers/databases.js';

/** A loopback HTTP server that counts the requests for its pixel. */
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

function hostileMail(to: string, pixelPort: number): string {
  return [
    'From: Mallory <mallory@sender.example>',
    `To: ${to}`,
    'Subject: Your invoice',
    'Message-ID: <invoice-1@sender.example>',
    'Date: Mon, 02 Jan 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="mix"',
    '',
    '--mix',
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Please find your invoice attached.',
    '--alt',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p id="body">Please find your invoice attached.</p>',
    '<script>window.__pwned = 1; parent.__pwned = 1</script>',
    `<img alt="pixel" src="http://127.0.0.1:${pixelPort}/pixel.png">`,
    '<a href="https://evil.example/">pay now</a>',
    '--alt--',
    '--mix',
    'Content-Type: text/html; name="invoice.html"',
    'Content-Disposition: attachment; filename="invoice.html"',
    '',
    '<script>alert(1)</script>',
    '--mix--',
    '',
  ].join('\r\n');
}

for (const db of testDatabases()) {
  t.test(`an operator claims a domain, manages addresses and reads hostile mail safely (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d, dns, ws } = env;
    const pixel = await pixelServer(t);
    const browser = await launchBrowser(t);
    const { context, page } = await loggedIn(t, browser, d);

    // Domains: the existing MX is shown and acknowledged; the records are listed with their checks.
    dns.set('corp.example', [{ type: 'MX', data: { preference: 10, exchange: 'aspmx.l.google.com' } }]);
    await page.getByRole('link', { name: 'Inbound' }).click();
    await page.getByRole('link', { name: 'Domains' }).click();
    await page.getByLabel('Custom domain').fill('corp.example');
    await page.getByRole('button', { name: 'Claim domain' }).click();
    await page.getByText(/already receives mail at aspmx\.l\.google\.com/).waitFor();
    await page.getByRole('button', { name: 'Acknowledge existing MX and claim' }).click();
    await page.getByRole('heading', { name: 'corp.example', level: 1 }).waitFor();
    const records = page.getByRole('table', { name: 'DNS records to publish' });
    await records.getByText('MX', { exact: true }).waitFor();
    t.equal(
      await page.getByRole('button', { name: /^Copy (MX|TXT) record (name|value)$/ }).count(),
      4,
      'copy buttons for names and values',
    );
    t.equal(await records.getByText('pending').count(), 2, 'both checks pending');
    await checkPage(t, page, 'inbound-domain-detail');

    // Publish the DKIM record and re-check: that check turns verified.
    const claimed = (await d.request('GET', '/v1/inbound/domains', { key: ws.live })).body.domains.find(
      (x: { domain: string }) => x.domain === 'corp.example',
    );
    const dkim = claimed.records.find((r: { check: string }) => r.check === 'dkim');
    dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
    d.clock.advance(60_000);
    await page.getByRole('button', { name: 'Re-check now' }).click();
    await records.getByText('verified').waitFor();
    t.equal(await records.getByText('pending').count(), 1, 'the MX check still pending');

    // The return path: its two records, copyable; published, it is verified on the next re-check.
    const returnPath = page.getByRole('table', { name: 'Return path records' });
    await returnPath.getByText('bounces.corp.example').first().waitFor();
    t.equal(await page.getByRole('button', { name: /^Copy return path (MX|TXT) record (name|value)$/ }).count(), 4);
    dns.set('bounces.corp.example', [
      { type: 'MX', data: { preference: 10, exchange: 'mx.postern.test' } },
      { type: 'TXT', data: 'v=spf1 a:mx.postern.test -all' },
    ]);
    d.clock.advance(60_000);
    await page.getByRole('button', { name: 'Re-check now' }).click();
    await page
      .getByRole('heading', { name: 'Return path (optional)' })
      .locator('xpath=following-sibling::p[1]')
      .getByText('verified')
      .waitFor();

    await page.getByRole('link', { name: 'Domains' }).click();
    await page.getByRole('link', { name: 'corp.example' }).waitFor();

    // Addresses: one named, one catch-all; the catch-all deactivated.
    await page.getByRole('link', { name: 'Addresses' }).click();
    await page.getByLabel('Local part').fill('support');
    await page.getByLabel('Description', { exact: true }).fill('Customer mail');
    await page.getByRole('button', { name: 'Create address' }).click();
    await page.getByText('Created support@acme.in.postern.test').waitFor();
    await page.getByLabel('Local part').fill('*');
    await page.getByRole('button', { name: 'Create address' }).click();
    await page.getByText('Created *@acme.in.postern.test').waitFor();
    await checkPage(t, page, 'inbound-addresses');
    await page
      .getByRole('row', { name: /\*@acme\.in\.postern\.test/ })
      .getByRole('button', { name: 'Deactivate' })
      .click();
    await page.getByRole('dialog').getByRole('button', { name: 'Deactivate' }).click();
    await page
      .getByRole('row', { name: /\*@acme\.in\.postern\.test/ })
      .getByText('inactive')
      .waitFor();
    const addresses = (await d.request('GET', '/v1/inbound/addresses', { key: ws.live })).body.addresses as {
      address: string;
      active: boolean;
    }[];
    t.same(
      addresses.map((a) => `${a.address} ${a.active}`).sort(),
      ['*@acme.in.postern.test false', 'support@acme.in.postern.test true'],
      'the catch-all is inactive, the named address active',
    );

    // Hostile mail.
    await sendRaw(
      d.smtpPort,
      { from: 'mallory@sender.example', to: ['support@acme.in.postern.test'] },
      hostileMail('support@acme.in.postern.test', pixel.port),
    );
    await page.getByRole('link', { name: 'Received mail' }).click();
    await page.getByRole('link', { name: 'Your invoice' }).waitFor();
    // Filtered by address: the catch-all received nothing, support the invoice.
    await page.getByLabel('Address').selectOption({ label: '*@acme.in.postern.test' });
    await page.getByText('No mail received yet.').waitFor();
    await page.getByLabel('Address').selectOption({ label: 'support@acme.in.postern.test' });
    await page.getByRole('link', { name: 'Your invoice' }).waitFor();
    await checkPage(t, page, 'inbound-received');
    await page.getByRole('link', { name: 'Your invoice' }).click();
    await page.getByRole('heading', { name: 'Your invoice', level: 1 }).waitFor();
    const frame = page.frameLocator('iframe[title="Message HTML"]');
    await frame.getByText('Please find your invoice attached.').waitFor();
    t.equal(await page.locator('iframe[title="Message HTML"]').getAttribute('sandbox'), 'allow-popups allow-popups-to-escape-sandbox');

    const mailFrame = () => page.frames().find((f) => f.url().includes('/dashboard/view/inbound/'))!;
    const pwned = async () => ({
      top: await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned),
      frame: await mailFrame().evaluate(() => (globalThis as { __pwned?: number }).__pwned),
    });
    // The frame's load event comes after its scripts would have run and its images would have been
    // fetched (or refused): past it, what did not happen will not.
    await mailFrame().waitForLoadState('load');
    t.same(await pwned(), { top: undefined, frame: undefined }, 'the script never ran, in the frame or the page');
    t.equal(pixel.hits.length, 0, 'the remote image was not fetched');
    t.equal(await frame.getByRole('link', { name: 'pay now' }).getAttribute('rel'), 'noopener noreferrer');

    // The verdicts render as badges with their details.
    for (const name of ['SPF', 'DKIM', 'DMARC', 'ARC', 'Spam', 'Virus']) {
      t.match(await page.locator(`[data-verdict="${name}"] .badge`).textContent(), new RegExp(`^${name} \\w+`), `${name} badge`);
    }
    // The attachment and the raw source are downloads.
    const attachment = page.getByRole('link', { name: 'invoice.html' });
    t.equal(await attachment.getAttribute('download'), 'invoice.html');
    const href = (await attachment.getAttribute('href'))!;
    const res = await context.request.get(`${d.url}${href}`);
    t.equal(res.status(), 200);
    t.match(res.headers()['content-disposition'], /^attachment;/, 'the attachment never renders inline');
    t.ok(await page.getByRole('link', { name: 'Download raw (.eml)' }).getAttribute('download'));
    t.match(await page.locator('.facts').textContent(), /Mallory <mallory@sender\.example>/);
    await checkPage(t, page, 'inbound-received-detail');

    // Remote content on request: the image is fetched, the script still does not run.
    await page.getByRole('button', { name: 'Load remote content' }).click();
    await page.getByText('Remote content loaded.').waitFor();
    await frame.getByText('Please find your invoice attached.').waitFor();
    t.ok(await until('the remote image to be fetched', () => pixel.hits.length > 0), 'the remote image is fetched once asked');
    t.match(mailFrame().url(), /\?remote=1$/);
    t.same(await pwned(), { top: undefined, frame: undefined }, 'the script still did not run');

    await page.getByRole('link', { name: 'Domains' }).click();
    await page.getByRole('link', { name: 'corp.example' }).waitFor();
    await checkPage(t, page, 'inbound-domains');
  });
}
