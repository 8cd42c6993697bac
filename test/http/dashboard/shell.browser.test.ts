// The dashboard shell in a real browser: login, the navigation, and axe-core on the first page.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`an operator logs in and sees the overview (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.getByRole('heading', { level: 1 }).waitFor();
    await checkPage(t, page, 'shell-overview');
  });
}
