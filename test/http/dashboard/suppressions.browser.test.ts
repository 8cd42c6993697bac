// Suppressions in the browser: add one by hand, search by part of an address, export the list as
// CSV (downloaded by the browser), remove one with confirmation, import a file with its upload's
// progress, its counts and its refused lines.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

    // An import: SendGrid's export columns, 5,000 addresses and two lines that are not entries.
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-import-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'bounces.csv');
    const rows = Array.from({ length: 5000 }, (_, i) => `user${i}@bounced.example,1700000000,550 5.1.1 unknown user`);
    writeFileSync(file, ['email,created,reason', rows[0], 'not an address,1700000000,x', ...rows.slice(1), ',,'].join('\n') + '\n');
    const importForm = page.getByRole('form', { name: 'Import a list' });
    await importForm.getByLabel('File').setInputFiles(file);
    await importForm.getByLabel('Reason for lines without one').selectOption('bounce');
    await importForm.getByRole('button', { name: 'Import' }).click();
    const result = page.getByRole('status', { name: 'Import result' });
    await result.getByText('Read 5002 lines: 5000 stored, 0 unchanged, 2 refused.').waitFor();
    t.same(
      await page.getByRole('list', { name: 'Refused lines' }).getByRole('listitem').allTextContents(),
      ['line 3: "not an address" is not an email address or *@domain', 'line 5003: no address'],
      'each refused line with its number',
    );
    t.equal(
      await page.getByRole('progressbar', { name: 'Upload progress' }).getAttribute('value'),
      String(readFileSync(file).length),
      'the progress bar ends full',
    );
    await importForm.getByText('Uploaded 100 %').waitFor();
    await checkPage(t, page, 'suppressions-imported');
    const stored = await daemon.app.suppressions.get({ workspaceId: ws.id, livemode: true }, 'user4999@bounced.example');
    t.match(
      stored,
      { reason: 'bounce', detail: '550 5.1.1 unknown user' },
      'stored with the reason chosen for lines whose reason is not one',
    );
    await page
      .getByRole('row', { name: /bounced\.example/ })
      .first()
      .waitFor();

    await importForm.getByRole('button', { name: 'Import' }).click();
    await result.getByText('Read 5002 lines: 0 stored, 5000 unchanged, 2 refused.').waitFor();
    t.pass('the same file again stores nothing');
  });
}
