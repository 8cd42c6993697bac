// Workspaces, operators and the audit log in the browser: an owner creates a workspace, changes
// its plan and invites a member limited to one workspace; the member, logged in in a second
// browser context, sees only that workspace and no owner pages; the audit log names who did what,
// when and from where; the last owner cannot be removed; the cluster's nodes are listed.
import t from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { until } from '../../helpers/until.js';
import { testDatabases } from '../../helpers/databases.js';

const MEMBER = { email: 'member@postern.test', password: 'member password 123' };

for (const db of testDatabases()) {
  t.test(`owner manages workspaces and operators; a member sees only its workspace (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    const browser = await launchBrowser(t);
    const { page } = await loggedIn(t, browser, daemon);
    await page.getByRole('link', { name: 'Workspaces & operators' }).click();
    await page.getByRole('row', { name: /Workspace acme/ }).waitFor();
    await checkPage(t, page, 'admin-workspaces');

    const wsForm = page.getByRole('form', { name: 'Create a workspace' });
    await wsForm.getByLabel('Slug').fill('globex');
    await wsForm.getByLabel('Workspace name').fill('Globex');
    await wsForm.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('row', { name: /Globex/ }).waitFor();
    await page.getByRole('combobox', { name: 'Workspace' }).locator('option', { hasText: 'Globex' }).waitFor({ state: 'attached' });
    t.ok(true, 'the switcher lists the new workspace');

    await page.getByLabel('Plan of Globex').selectOption('pro');
    t.ok(await until('the plan to change', async () => (await daemon.app.workspaces.bySlug('globex')).plan === 'pro'), 'the plan changed');

    const invite = page.getByRole('form', { name: 'Invite an operator' });
    await invite.getByLabel('Operator email').fill(MEMBER.email);
    await invite.getByLabel('First password').fill(MEMBER.password);
    await invite.getByLabel('Role').selectOption('member');
    await invite.getByRole('checkbox', { name: 'Globex' }).check();
    await checkPage(t, page, 'admin-invite');
    await invite.getByRole('button', { name: 'Invite operator' }).click();
    const memberRow = page.getByRole('row', { name: /member@postern\.test/ });
    await memberRow.waitFor();
    t.match(await memberRow.textContent(), /Globex/, 'the member belongs to Globex');
    t.notMatch(await memberRow.textContent(), /Workspace acme/, 'and not to acme');

    // The last owner cannot be removed: the error is shown in the dialog.
    await page.getByRole('button', { name: 'Remove owner@postern.test' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Remove', exact: true }).click();
    await dialog.getByRole('alert').waitFor();
    t.match(await dialog.getByRole('alert').textContent(), /last owner/, 'the last owner cannot be removed');
    await checkPage(t, page, 'admin-last-owner');
    await dialog.getByRole('button', { name: 'Cancel' }).click();

    // A second browser context: the member.
    const member = await loggedIn(t, browser, daemon, MEMBER);
    const options = await member.page.getByRole('combobox', { name: 'Workspace' }).locator('option').allTextContents();
    t.same(options, ['Globex'], 'the member sees only Globex');
    t.equal(await member.page.getByRole('link', { name: 'Workspaces & operators' }).count(), 0, 'no Workspaces nav');
    t.equal(await member.page.getByRole('link', { name: 'Audit log' }).count(), 0, 'no Audit nav');
    t.equal(await member.page.getByRole('link', { name: 'Cluster nodes' }).count(), 0, 'no Cluster nodes nav');
    await member.page.goto(`${daemon.url}/dashboard/workspaces`);
    await member.page.getByRole('heading', { name: 'Owners only' }).waitFor();
    await checkPage(t, member.page, 'admin-member-refused');

    // Change the member's access: add acme too.
    await page.getByRole('button', { name: 'Change access of member@postern.test' }).click();
    const access = page.getByRole('form', { name: 'Access of member@postern.test' });
    await access.getByRole('checkbox', { name: 'Workspace acme' }).check();
    await access.getByRole('button', { name: 'Save access' }).click();
    await page
      .getByRole('row', { name: /member@postern\.test/ })
      .filter({ hasText: 'Workspace acme' })
      .waitFor();

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('row', { name: /workspace\.create/ }).waitFor();
    const text = (await page.locator('tbody').textContent())!;
    for (const action of ['workspace.create', 'workspace.plan', 'operator.create', 'operator.access', 'session.login'])
      t.match(text, action, `the log lists ${action}`);
    t.match(await page.getByRole('row', { name: /workspace\.plan/ }).textContent(), /globex pro/, 'the plan change names the workspace');
    const created = page.getByRole('row', { name: /workspace\.create/ });
    t.match(await created.textContent(), /owner@postern\.test/, 'who');
    t.match(await created.textContent(), /globex/, 'what');
    t.match(await created.textContent(), /127\.0\.0\.1/, 'from where');
    t.match(await created.locator('time').getAttribute('datetime'), /^\d{4}-/, 'when');
    const rows = await page.locator('tbody tr').allTextContents();
    t.ok(rows.findIndex((r) => r.includes('operator.access')) < rows.findIndex((r) => r.includes('workspace.create')), 'newest first');
    await checkPage(t, page, 'admin-audit');

    const filter = page.getByRole('search', { name: 'Filter the audit log' });
    await filter.getByLabel('Operator email').fill(MEMBER.email);
    await filter.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('row', { name: /workspace\.create/ }).waitFor({ state: 'detached' });
    const memberRows = await page.locator('tbody tr').allTextContents();
    t.ok(memberRows.length >= 1 && memberRows.every((r) => r.includes(MEMBER.email)), 'filtered by operator');

    // The cluster's nodes: here one, this process, beating: its health, in flight and claimed.
    await page.getByRole('link', { name: 'Cluster nodes' }).click();
    const self = page.getByRole('row', { name: /\(this one\)/ });
    await self.waitFor();
    t.match(await self.textContent(), new RegExp(`pid ${process.pid}`), 'this process by its pid');
    const cells = (await self.locator('td').allTextContents()).map((c) => c.trim());
    t.same(cells.slice(-3), ['ok', '0', '0'], 'healthy (beating), with nothing in flight and nothing claimed');
    await checkPage(t, page, 'admin-nodes');
  });
}
