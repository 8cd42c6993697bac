// A real browser for the dashboard tests: headless Chromium from Debian's `chromium` package,
// driven by playwright-core. Helpers log an operator in through the login page, run axe-core on
// the page in that browser, and save a screenshot of every page checked.
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import type { TestDaemon } from './daemon.js';
import { OWNER } from './dashboard.js';

export { OWNER };

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Where Chromium is: CHROMIUM_PATH, else Debian's package. A missing browser fails the test. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Chromium with the suite's flags, and `args` of the test's own (a host resolver rule, a trusted key). */
export async function launchBrowser(t: Teardown, args: string[] = []): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...FLAGS, ...args] });
  t.teardown(() => browser.close());
  // The test files run under tsx, whose esbuild keeps a named function's name by a call to a
  // helper of the module, `__name(fn, "name")`. A function given to page.evaluate() goes to the
  // page as its source text, where that helper is not defined: every context (and so every page,
  // newPage making one) defines it, as what it is for the page, the identity.
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (options) => {
    const context = await newContext(options);
    await context.addInitScript(KEEP_NAMES);
    return context;
  };
  return browser;
}

const KEEP_NAMES = 'globalThis.__name = (fn) => fn;';

/**
 * A platform authenticator for `page` through Chromium's DevTools (CTAP2, built in, discoverable
 * credentials, the user verified and present at every ceremony), as a phone's or a laptop's
 * passkey store answers. The session reads what it holds (`WebAuthn.getCredentials`).
 */
export async function virtualAuthenticator(context: BrowserContext, page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { cdp, authenticatorId };
}

let screenshots: string | null = null;

/** Screenshots go here (POSTERN_SCREENSHOTS, else one temp dir per test file), named by page. */
function screenshotDir(): string {
  screenshots ??= process.env.POSTERN_SCREENSHOTS ?? mkdtempSync(path.join(tmpdir(), 'postern-dashboard-'));
  mkdirSync(screenshots, { recursive: true });
  return screenshots;
}

export async function screenshot(page: Page, name: string): Promise<string> {
  const file = path.join(screenshotDir(), `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Creates the owner (through the store, as `postern operator create` does) unless it exists. */
export async function ensureOwner(daemon: TestDaemon, who = OWNER): Promise<void> {
  const existing = await daemon.app.operators.list();
  if (!existing.some((o) => o.email === who.email)) await daemon.app.operators.create({ ...who, role: 'owner' });
}

/** A laptop's screen, the size every page is checked at unless a test says otherwise. */
const DESKTOP = { width: 1280, height: 860 };

/** A fresh browser context logged in through the login page; errors in the page fail the test. */
export async function loggedIn(
  t: Teardown & { fail(msg: string): void },
  browser: Browser,
  daemon: TestDaemon,
  who = OWNER,
  viewport: { width: number; height: number } = DESKTOP,
): Promise<{ context: BrowserContext; page: Page }> {
  await ensureOwner(daemon, who);
  const context = await browser.newContext({ viewport });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.on('pageerror', (err) => t.fail(`error in the page: ${err.message}`));
  await page.goto(`${daemon.url}/dashboard/`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
  return { context, page };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; html: string }[];
}

/**
 * Runs axe-core in the page (evaluated through the DevTools protocol, so the page's strict CSP
 * stays on) and returns the serious and critical violations, with the minor ones counted.
 */
async function axe(page: Page): Promise<{ serious: AxeViolation[]; all: number }> {
  await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(async () => {
    const g = globalThis as any;
    const result = await g.axe.run(g.document, { resultTypes: ['violations'] });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n: any) => ({ target: n.target, html: String(n.html).slice(0, 200) })),
    }));
  })) as AxeViolation[];
  return { serious: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'), all: violations.length };
}

/** Screenshot plus axe: the page has no serious or critical violation. */
export async function checkPage(t: { same(a: unknown, b: unknown, msg: string): void }, page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  const result = await axe(page);
  t.same(
    result.serious.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    [],
    `${name}: no serious or critical axe-core violations`,
  );
}
