// The dashboard shell in a real browser: login, the navigation, and axe-core on the first page.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { sqliteOnly } from '../../helpers/databases.js';

sqliteOnly(
  'a page in Chromium (what it shows, axe-core); the dashboard routes hold no SQL and the services they call run on both databases in the API tests',
);

t.test('an operator logs in and sees the overview', async (t) => {
  const daemon = await bootDaemon(t);
  await daemon.workspace('acme');
  const browser = await launchBrowser(t);
  const { page } = await loggedIn(t, browser, daemon);
  await page.getByRole('heading', { level: 1 }).waitFor();
  await checkPage(t, page, 'shell-overview');
});
