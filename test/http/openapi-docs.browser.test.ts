// The API reference page (/docs) in a real browser (headless Chromium): Swagger UI, served from the
// copy bundled in node_modules, draws the operations of /v1/openapi.json; every request the page
// makes stays on the daemon's origin (no CDN, no online validator), and the page's policy is
// never violated.
import t from 'tap';
import { launchBrowser, screenshot } from '../helpers/browser.js';
import { bootDaemon } from '../helpers/daemon.js';
import { sqliteOnly } from '../helpers/databases.js';

sqliteOnly('the API reference page in Chromium, drawn from /v1/openapi.json; it reads nothing stored');

t.test('/docs draws every operation from the bundled Swagger UI, and nothing leaves the origin', async (t) => {
  const d = await bootDaemon(t);
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const requests: string[] = [];
  const violations: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (err) => t.fail(`error in the page: ${err.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });

  const res = await page.goto(`${d.url}/docs`);
  t.equal(res?.status(), 200);
  t.match(res?.headers()['content-security-policy'], /default-src 'none'; script-src 'self'; style-src 'self'/);
  await page.locator('.opblock-summary-path', { hasText: '/v1/send-raw' }).first().waitFor();

  const doc = (await d.request('GET', '/v1/openapi.json')).body;
  let operations = 0;
  for (const item of Object.values(doc.paths as Record<string, object>)) operations += Object.keys(item).length;
  t.equal(await page.locator('.opblock').count(), operations, `every operation is drawn (${operations})`);
  await page.getByText('Postern HTTP API').first().waitFor();

  // Open one operation: its parameters and the error envelope are drawn from the document.
  await page.locator('.opblock-summary-path', { hasText: '/v1/send-raw' }).first().click();
  await page.getByText('Idempotency-Key').first().waitFor();
  await screenshot(page, 'api-docs');

  t.ok(requests.length >= 4, `the page made its requests (${requests.length})`);
  t.same(
    requests.filter((u) => !u.startsWith(`${d.url}/`) && !u.startsWith('data:')),
    [],
    'no request left the daemon’s origin',
  );
  t.ok(requests.includes(`${d.url}/v1/openapi.json`), 'the page read /v1/openapi.json');
  t.same(violations, [], 'no content security policy violation');
});
