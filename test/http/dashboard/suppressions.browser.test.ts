// Suppressions in the browser: add one by hand, search by part of an address, export the list as
// CSV (downloaded by the browser), remove one with confirmation.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`add, search, export and remove suppressions (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    const ws = await daemon.workspace('acme');
    for (const address of ['bounced@example.com', 'angry@example.org'])
      t.equal(
        (await daemon.request('POST', '/v1/suppressions', { key: ws.live, body: { address, detail: 'said "no", twice' } })).status,
        201,
      );
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.getByRole('link', { name: 'Suppressions' }).click();
    await page.getByRole('row', { name: /bounced@example\.com/ }).waitFor();
    await checkPage(t, page, 'suppressions-list');

    const form = page.getByRole('form', { name: 'Suppress an address' });
    await form.getByLabel('Address').fill('Someone@Example.net');
    await form.getByLabel('Note (optional)').fill('asked by phone');
    await form.getByRole('button', { name: 'Suppress' }).click();
    await page.getByRole('row', { name: /someone@example\.net/ }).waitFor();
    t.ok(
      (await daemon.app.suppressions.get({ workspaceId: ws.id, livemode: true }, 'someone@example.net'))?.reason === 'manual',
      'stored as a manual suppression',
    );

    const search = page.getByRole('search', { name: 'Search suppressions' });
    await search.getByLabel('Search').fill('example.org');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('row', { name: /bounced@example\.com/ }).waitFor({ state: 'detached' });
    t.equal(await page.getByRole('row', { name: /angry@example\.org/ }).count(), 1, 'the search finds the address');
    t.equal(await page.locator('tbody tr').count(), 1, 'and only it');
    await checkPage(t, page, 'suppressions-search');
    await search.getByLabel('Search').fill('nobody-here');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No suppressed address contains').waitFor();
    await search.getByLabel('Search').fill('');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('row', { name: /bounced@example\.com/ }).waitFor();

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    t.equal(download.suggestedFilename(), 'suppressions-acme-live.csv');
    const csv = readFileSync(await download.path(), 'utf8');
    const lines = csv.trim().split('\r\n');
    t.equal(lines[0], 'address,reason,detail,message_id,created_at', 'a header line');
    t.equal(lines.length, 4, 'every suppression, one line each');
    t.ok(
      lines.some((l) => l.startsWith('someone@example.net,manual,asked by phone,,')),
      'the added one',
    );
    t.ok(
      lines.some((l) => l.startsWith('bounced@example.com,manual,"said ""no"", twice",,')),
      'fields quoted as CSV',
    );

    await page.getByRole('button', { name: 'Remove bounced@example.com' }).click();
    const dialog = page.getByRole('dialog');
    await checkPage(t, page, 'suppressions-remove-confirm');
    await dialog.getByRole('button', { name: 'Remove', exact: true }).click();
    await page.getByRole('row', { name: /bounced@example\.com/ }).waitFor({ state: 'detached' });
    t.equal(
      await daemon.app.suppressions.get({ workspaceId: ws.id, livemode: true }, 'bounced@example.com'),
      null,
      'removed from the store',
    );
  });
}
