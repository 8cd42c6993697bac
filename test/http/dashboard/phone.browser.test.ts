// Every dashboard page on a phone (390×844, an iPhone 14's viewport) in a real browser, with rows
// of long, unbreakable values (addresses, URLs, ids, names): the page never scrolls sideways, a
// table wider than the phone scrolls inside its own box, the navigation is collapsed behind a menu
// button that opens it (by click and by keyboard) and closes once a link is followed, and axe-core
// finds nothing serious at that size.
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { checkPage, launchBrowser, loggedIn } from '../../helpers/browser.js';
import { dashboardLogin } from '../../helpers/dashboard.js';
import { testDatabases } from '../../helpers/databases.js';
import { createAddress, sendRaw, setup, simpleMail } from '../../helpers/inbound.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { startReceiver } from '../../helpers/webhook-receiver.js';
import { emit, sampleMessage, tick } from '../../helpers/webhooks.js';

const PHONE = { width: 390, height: 844 };

// Values a phone cannot fit on one line and a browser cannot break (no spaces, no hyphens).
const RECIPIENT = 'someone.with.a.rather.long.address+newsletter_2026@mail.subsidiary.customer-company.example.com';
const SUPPRESSED = 'returned.mail.for.an.address.that.is.long@bounces.department.another-customer.example.org';
const LOCAL_PART = 'customer_support_and_billing_enquiries_2026';
const DOMAIN = 'mail.a-rather-long-subsidiary-name-of-the-customer.example';
const DESTINATION = 'the-destination-domain-that-blocklisted-us.mail-provider.example';
const SLUG = 'order_confirmation_with_invoice_attached_and_tracking_link_v2';
const KEY_NAME = 'billing_service_for_the_european_storefront_nightly_batch';
const WORKSPACE = 'Acme_Europe_Storefront_and_Marketplace_Operations_Workspace';

/** What the page's layout comes to at this size, measured in the page. */
interface Layout {
  scrollWidth: number;
  innerWidth: number;
  overflowHidden: boolean;
  /** Elements reaching past the right edge that no scrolling box holds (the first few). */
  outside: string[];
  tables: { name: string; contained: boolean; wide: boolean; scrolls: boolean }[];
}

/** The slice of the DOM the page-side code reads (the tests compile without the DOM's types). */
interface Box {
  tagName: string;
  id: string;
  className: unknown;
  textContent: string | null;
  parentElement: Box | null;
  clientWidth: number;
  scrollWidth: number;
  getBoundingClientRect(): { left: number; right: number; width: number };
  querySelector(selector: string): Box | null;
}
interface Dom {
  innerWidth: number;
  document: { documentElement: Box; body: Box; activeElement: Box | null; querySelectorAll(selector: string): Iterable<Box> };
  getComputedStyle(el: Box): { overflowX: string };
}

async function measure(page: Page): Promise<Layout> {
  return page.evaluate(() => {
    const { innerWidth: vw, document, getComputedStyle } = globalThis as unknown as Dom;
    const name = (el: Box) =>
      `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : ''}`;
    /** The nearest box between el and <body> that scrolls or clips sideways. */
    const scroller = (el: Box): Box | null => {
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(p).overflowX)) return p;
      }
      return null;
    };
    const outside = [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > vw + 0.5 && !scroller(el))
      .slice(0, 5)
      .map((el) => `${name(el)} (right edge ${Math.round(el.getBoundingClientRect().right)})`);
    const tables = [...document.querySelectorAll('table')].map((table) => {
      const box = scroller(table);
      const r = box?.getBoundingClientRect();
      const auto = box ? ['auto', 'scroll'].includes(getComputedStyle(box).overflowX) : false;
      return {
        name: table.querySelector('caption')?.textContent ?? name(table),
        contained: !!r && auto && r.left >= -0.5 && r.right <= vw + 0.5,
        wide: table.getBoundingClientRect().width > (box?.clientWidth ?? vw) + 0.5,
        scrolls: !!box && box.scrollWidth > box.clientWidth,
      };
    });
    const hides = (el: Box) => ['hidden', 'clip'].includes(getComputedStyle(el).overflowX);
    return {
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: vw,
      overflowHidden: hides(document.documentElement) || hides(document.body),
      outside,
      tables,
    };
  });
}

let wideTables = 0;

/** The layout checks and axe-core, for the page as it is now. */
async function checkPhone(t: Test, page: Page, name: string): Promise<void> {
  const l = await measure(page);
  t.ok(
    l.scrollWidth <= l.innerWidth,
    `${name}: no sideways scroll (page ${l.scrollWidth}px wide on a ${l.innerWidth}px screen; past the edge: ${l.outside.join(', ') || 'nothing'})`,
  );
  t.same(l.outside, [], `${name}: nothing reaches past the right edge outside a scrolling box`);
  t.notOk(l.overflowHidden, `${name}: the page does not hide what overflows`);
  for (const table of l.tables) {
    t.ok(table.contained, `${name}: table "${table.name}" is inside a box that scrolls sideways, within the screen`);
    if (table.wide) {
      wideTables++;
      t.ok(table.scrolls, `${name}: table "${table.name}" is wider than its box, which scrolls`);
    }
  }
  await checkPage(t, page, `phone-${name}`);
}

/** The navigation is collapsed: the menu button shows, closed, and no link of the menu does. */
async function checkCollapsed(t: Test, page: Page, name: string): Promise<void> {
  const nav = page.getByRole('navigation', { name: 'Dashboard' });
  const menu = nav.getByRole('button', { name: 'Menu' });
  t.ok(await menu.isVisible(), `${name}: the menu button shows`);
  t.equal(await menu.getAttribute('aria-expanded'), 'false', `${name}: the menu is closed`);
  t.equal(await nav.getByRole('link').count(), 0, `${name}: no navigation link shows`);
}

for (const db of testDatabases()) {
  t.test(`every dashboard page on a phone (${db})`, async (t) => {
    // The destination's MX: a loopback SMTP server that refuses its recipient with a long reply.
    const sink = await startSink(t, { rcpt: () => ({ code: 550, message: `5.1.1 <${RECIPIENT}>: no such user here` }) });
    const env = await setup(t, {
      db,
      env: {
        POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true',
        POSTERN_CHANNELS_ALLOW_PRIVATE: 'true',
        POSTERN_DELIVERY_PORT: String(sink.port),
        POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
      },
    });
    const { d, dns, ws } = env;
    dns.set('mx.example.net', [{ type: 'A', data: '127.0.0.1' }]);
    dns.set(DESTINATION, [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }]);
    const ok = (r: { status: number; body: unknown }, status: number, what: string) =>
      t.equal(r.status, status, `${what}: ${r.status === status ? 'ok' : JSON.stringify(r.body)}`);

    // Data with long values on every page.
    const admin = await dashboardLogin(d);
    await admin.select(ws.id, 'live');
    ok(await admin.request('POST', '/dashboard/api/workspaces', { slug: 'acme-europe', name: WORKSPACE }), 201, 'a workspace');
    ok(await admin.request('POST', '/dashboard/api/keys', { name: KEY_NAME, env: 'live', scopes: ['send', 'read'] }), 201, 'a key');
    ok(await admin.request('POST', '/dashboard/api/smtp/credentials', { env: 'live', description: KEY_NAME }), 201, 'an SMTP credential');
    ok(
      await admin.request('POST', '/dashboard/api/connections', {
        channel: 'sms',
        provider: 'http',
        name: KEY_NAME,
        values: { url: `http://127.0.0.1:9/sms/gateway/${KEY_NAME}`, secret: 'gateway-secret' },
      }),
      201,
      'a connection',
    );
    const messageIds: string[] = [];
    for (const n of [1, 2, 3]) {
      const r = await d.request('POST', '/v1/send', {
        key: ws.live,
        body: {
          to: RECIPIENT,
          channel: 'email',
          content: { subject: `Your order ${SLUG}_${n}`, text: `See https://shop.example.com/orders/${SLUG}/${n}`, html: `<p>${SLUG}</p>` },
          metadata: { order: `${SLUG}_${n}` },
        },
      });
      ok(r, 202, `message ${n}`);
      messageIds.push(r.body.id);
    }
    ok(
      await d.request('POST', '/v1/templates', { key: ws.live, body: { slug: SLUG, channel: 'email', description: KEY_NAME } }),
      201,
      'a template',
    );
    ok(
      await d.request('POST', '/v1/suppressions', { key: ws.live, body: { address: SUPPRESSED, reason: 'manual', detail: KEY_NAME } }),
      201,
      'a suppression',
    );
    // Mail refused by the destination makes it one, with its last error; then it is suspended. (The
    // messages above fail at once: the loopback DNS knows no domain of theirs.)
    ok(
      await d.request('POST', '/v1/send', {
        key: ws.live,
        body: { to: `gone@${DESTINATION}`, channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      }),
      202,
      'a message to the destination',
    );
    await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    await d.app.destinations.flush();
    ok(
      await d.request('POST', `/v1/destinations/${DESTINATION}/suspend`, { key: ws.live, body: { reason: `blocklisted: ${KEY_NAME}` } }),
      200,
      'a suspended destination',
    );
    const receiver = await startReceiver(() => 200);
    t.teardown(() => receiver.close());
    const hook = await d.request('POST', '/v1/webhooks', {
      key: ws.live,
      body: { url: `${receiver.url}?customer=${KEY_NAME}&token=${SLUG}`, description: KEY_NAME, events: ['*'] },
    });
    ok(hook, 201, 'a webhook endpoint');
    await emit(d, ws.id, 'message.delivered', { ...sampleMessage(1), recipient: RECIPIENT });
    await tick(d);
    await receiver.waitFor(1);
    const domain = await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: DOMAIN } });
    ok(domain, 201, 'an inbound domain');
    const address = await createAddress(env, { localPart: LOCAL_PART, description: KEY_NAME });
    await sendRaw(
      d.smtpPort,
      { from: SUPPRESSED, to: [address.address] },
      simpleMail({ from: SUPPRESSED, to: address.address, subject: `Re: ${SLUG}`, body: `Reply about ${RECIPIENT}` }),
    );
    const received = (await d.request('GET', '/v1/inbound/messages', { key: ws.live })).body.messages;
    t.equal(received.length, 1, 'a received message');

    const browser = await launchBrowser(t);

    // Before a session: the login and setup pages.
    const anonymous = await browser.newContext({ viewport: PHONE });
    t.teardown(() => anonymous.close());
    const anon = await anonymous.newPage();
    anon.on('pageerror', (err) => t.fail(`error in the page: ${err.message}`));
    await anon.goto(`${d.url}/dashboard/`);
    await anon.getByRole('button', { name: 'Log in' }).waitFor();
    await checkPhone(t, anon, 'login');
    await anon.goto(`${d.url}/dashboard/setup?token=x`);
    await anon.getByRole('heading', { level: 1 }).waitFor();
    await checkPhone(t, anon, 'setup');

    const { page } = await loggedIn(t, browser, d, undefined, PHONE);
    t.same(page.viewportSize(), PHONE, 'the phone’s viewport');
    await page.getByRole('combobox', { name: 'Workspace' }).selectOption(ws.id);
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await checkCollapsed(t, page, 'overview');
    await checkPhone(t, page, 'overview');

    // The menu opens and closes by click and by keyboard; while open, the page still fits.
    const nav = page.getByRole('navigation', { name: 'Dashboard' });
    const menu = nav.getByRole('button', { name: 'Menu' });
    t.equal(await page.locator(`#${await menu.getAttribute('aria-controls')}`).count(), 1, 'the button names the list it controls');
    await menu.click();
    t.equal(await menu.getAttribute('aria-expanded'), 'true', 'a click opens the menu');
    await nav.getByRole('link', { name: 'Overview' }).waitFor();
    t.ok(await nav.getByRole('link', { name: 'Audit log' }).isVisible(), 'its links show');
    await checkPhone(t, page, 'menu-open');
    await page.keyboard.press('Escape');
    t.equal(await menu.getAttribute('aria-expanded'), 'false', 'Escape closes it');
    t.ok(await menu.evaluate((el) => el === (globalThis as unknown as Dom).document.activeElement), 'and leaves the focus on the button');
    await page.keyboard.press('Enter');
    t.equal(await menu.getAttribute('aria-expanded'), 'true', 'Enter on the button opens it');
    await page.keyboard.press('Tab');
    t.equal(
      await page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.textContent),
      'Overview',
      'Tab goes to its first link',
    );
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Enter');
    t.equal(await menu.getAttribute('aria-expanded'), 'false', 'Enter again closes it');

    /** Follows a link of the menu; the menu closes behind it. */
    const go = async (label: string, heading: string | RegExp, shows?: string) => {
      await menu.click();
      await nav.getByRole('link', { name: label, exact: true }).click();
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      if (shows) await page.getByText(shows).filter({ visible: true }).first().waitFor();
      await checkCollapsed(t, page, label);
    };
    /** Opens a page by its address (one no menu link leads to). */
    const open = async (path: string, heading: string | RegExp, shows?: string) => {
      await page.goto(`${d.url}/dashboard${path}`);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      if (shows) await page.getByText(shows).filter({ visible: true }).first().waitFor();
      await checkCollapsed(t, page, path);
    };

    await go('Messages', 'Messages', messageIds[0]);
    await checkPhone(t, page, 'messages');
    await open(`/messages/${messageIds[0]}`, `Message ${messageIds[0]}`, RECIPIENT);
    await checkPhone(t, page, 'message');

    await go('Templates', 'Templates', SLUG);
    await checkPhone(t, page, 'templates');
    await open(`/templates/${SLUG}`, `Template ${SLUG}`);
    await page.getByLabel('Subject').waitFor();
    await checkPhone(t, page, 'template');

    await go('Inbound', 'Inbound', `Re: ${SLUG}`);
    await checkPhone(t, page, 'inbound');
    await open(`/inbound/messages/${received[0].id}`, `Re: ${SLUG}`, SUPPRESSED);
    await checkPhone(t, page, 'inbound-message');
    await open('/inbound/domains', 'Inbound', DOMAIN);
    await checkPhone(t, page, 'inbound-domains');
    await open(`/inbound/domains/${domain.body.id}`, DOMAIN);
    await page.getByRole('table', { name: 'Domain checks' }).waitFor();
    await checkPhone(t, page, 'inbound-domain');
    await open('/inbound/addresses', 'Inbound', address.address);
    await checkPhone(t, page, 'inbound-addresses');

    await go('Webhooks', 'Webhooks', KEY_NAME);
    await checkPhone(t, page, 'webhooks');
    await open(`/webhooks/${hook.body.id}`, 'Webhook endpoint');
    const delivery = page.getByRole('row', { name: /message\.delivered/ });
    await delivery.getByRole('button', { name: /Show attempts/ }).click();
    await page
      .getByRole('region', { name: /Delivery dlv_/ })
      .getByText(`POST ${receiver.url}`)
      .first()
      .waitFor();
    await checkPhone(t, page, 'webhook');

    await go('Suppressions', 'Suppressions', SUPPRESSED);
    await checkPhone(t, page, 'suppressions');
    await go('Destinations', 'Destinations', DESTINATION);
    await checkPhone(t, page, 'destinations');
    await go('Connections', 'Connections', KEY_NAME);
    await checkPhone(t, page, 'connections');
    await go('API keys', 'API keys', KEY_NAME);
    await checkPhone(t, page, 'keys');
    await go('SMTP', 'SMTP', KEY_NAME);
    await checkPhone(t, page, 'smtp');
    await go('Workspaces & operators', 'Workspaces & operators', WORKSPACE);
    await checkPhone(t, page, 'workspaces');
    await go('Audit log', 'Audit log', 'workspace.create');
    await checkPhone(t, page, 'audit');
    await go('Cluster nodes', 'Cluster nodes', '(this one)');
    await checkPhone(t, page, 'nodes');
    await go('Account', 'Account');
    await page.getByRole('heading', { name: 'Second factor' }).waitFor();
    await checkPhone(t, page, 'account');
    await go('Overview', 'Overview');

    t.ok(wideTables > 0, `the data made tables wider than the phone (${wideTables}), and they scrolled in their boxes`);
  });
}
