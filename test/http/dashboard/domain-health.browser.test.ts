// A custom domain's page in a real browser shows what receivers will judge (the doctor's checks,
// with the record to publish) and what they reported: a DMARC aggregate report and a TLS report
// mailed to the report address over SMTP appear as the day's figures, own mail told apart; beside
// them, the inbound STARTTLS sessions those two mails came in by.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { bounceDomainOf } from '../../../src/domains/names.js';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { setup, transport } from '../../helpers/inbound.js';
import { testDatabases } from '../../helpers/databases.js';
import { until } from '../../helpers/until.js';
import { zip } from '../../helpers/zip.js';

const fixture = (name: string) =>
  readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'reports', name), 'utf8');

for (const db of testDatabases()) {
  t.test(`a domain's checks and reports on its page (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_DOCTOR_PUBLIC_IPS: '192.0.2.10' } });
    const { d, ws } = env;
    const claimed = await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'example.com' } });
    t.equal(claimed.status, 201);

    // Yesterday's reports, by the daemon's clock.
    const day = new Date(d.clock.now().getTime() - 86_400_000).toISOString().slice(0, 10);
    const begin = Date.parse(`${day}T00:00:00Z`) / 1000;
    const dmarc = fixture('dmarc-rfc7489.xml')
      .replace('<begin>1335571200</begin>', `<begin>${begin}</begin>`)
      .replace('<end>1335657599</end>', `<end>${begin + 86_399}</end>`);
    const tls = fixture('tls-rfc8460.json').replaceAll('2026-11-21', day);
    const to = `reports@${bounceDomainOf(d.app.config)}`;
    const mail = transport(d.smtpPort);
    await mail.sendMail({
      from: 'noreply-dmarc-support@acme.com',
      to,
      subject: 'Report Domain: example.com',
      text: 'Aggregate report attached.',
      attachments: [
        { filename: 'report.zip', content: zip([{ name: 'report.xml', data: Buffer.from(dmarc) }]), contentType: 'application/zip' },
      ],
    });
    await mail.sendMail({
      from: 'tls-reports@company-x.example',
      to,
      subject: 'Report Domain: example.com',
      text: 'TLS report attached.',
      attachments: [{ filename: 'report.json.gz', content: gzipSync(tls), contentType: 'application/tlsrpt+gzip' }],
    });

    // Both mails came over STARTTLS (nodemailer's default when offered): two inbound sessions today,
    // counted when each ended.
    const today = d.clock.now().toISOString().slice(0, 10);
    await until('the two STARTTLS sessions counted', async () => {
      const res = await d.request('GET', '/v1/reports/tls', { key: ws.live });
      return res.body.inbound?.[0]?.successful === 2;
    });

    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, d);
    await page.goto(`${d.url}/dashboard/inbound/domains/${claimed.body.id}`);
    await page.getByRole('heading', { name: 'example.com', level: 1 }).waitFor();

    const checks = page.getByRole('table', { name: 'Domain checks' });
    const dmarcCheck = checks.getByRole('row').filter({ has: page.getByRole('cell', { name: 'dmarc', exact: true }) });
    await dmarcCheck.waitFor();
    t.match(
      await dmarcCheck.textContent(),
      /fail.*_dmarc\.example\.com TXT v=DMARC1; p=none; rua=mailto:reports@bounces\.mx\.postern\.test/,
    );

    const reports = page.getByRole('table', { name: 'DMARC reports per day' });
    const row = reports.getByRole('row').filter({ hasText: day });
    await row.waitFor();
    const cells = await row.getByRole('cell').allTextContents();
    t.same(cells.slice(0, 6), [day, '125', '120 (96%)', '120 of 123', '2 (0 passed)', '0 / 0']);
    t.match(cells[6], '192.0.2.10 ×3 (own), 198.51.100.7 ×2');

    const tlsRow = page.getByRole('table', { name: 'TLS reports per day' }).getByRole('row').filter({ hasText: day });
    t.same((await tlsRow.getByRole('cell').allTextContents()).slice(0, 3), [day, '5629', '303 (5.4%)']);
    t.match(await tlsRow.textContent(), 'certificate-expired ×100');
    const inboundRow = page.getByRole('table', { name: 'Inbound STARTTLS sessions per day' }).getByRole('row').filter({ hasText: today });
    t.same(await inboundRow.getByRole('cell').allTextContents(), [today, 'mx.postern.test', '2', '0 (0%)', '—']);
    await checkPage(t, page, 'inbound-domain-health');
  });
}
