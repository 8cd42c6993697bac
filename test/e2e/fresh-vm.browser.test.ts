// docs/install.md's fresh-VM recipe, as far as loopback allows, with Pebble in the public CA's
// place: a daemon configured as the recipe says (HTTPS on, ACME on, submission on) obtains its
// certificate, and Chromium, resolving the box's name to loopback and trusting Pebble's root as a
// browser trusts a public CA, opens the setup link the daemon names over HTTPS, creates the owner,
// adds a passkey (a secure context: WebAuthn refuses pages with certificate errors) and signs in
// with it alone; plain HTTP sends the browser to HTTPS; the MX presents the CA certificate on
// STARTTLS. The MTA-STS leg (the policy over HTTPS) is test/certificates/acme.test.ts's.
import { createHash, X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import t from 'tap';
import { checkPage, launchBrowser, OWNER, virtualAuthenticator } from '../helpers/browser.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startForwarder, startPebble } from '../helpers/pebble.js';
import { starttls } from '../helpers/starttls.js';
import { until } from '../helpers/until.js';

const NAME = 'mx.postern.test';

/** STARTTLS on the MX: whether the certificate presented verifies against `ca` for NAME. */
async function starttlsVerified(port: number, ca: string): Promise<boolean> {
  const plain = await starttls(port);
  return new Promise((resolve, reject) => {
    const secure = tls.connect({ socket: plain, ca, servername: NAME });
    secure.once('secureConnect', () => {
      secure.end('QUIT\r\n');
      resolve(secure.authorized);
    });
    secure.once('error', reject);
  });
}

for (const db of testDatabases())
  t.test(`from nothing to an HTTPS dashboard with a passkey, on a CA certificate (${db})`, async (t) => {
    const dns = await startDnsServer({ [NAME]: [{ type: 'A', data: '127.0.0.1' }] });
    t.teardown(() => dns.close());
    const http = await startForwarder(t);
    const pebble = await startPebble({ dnsServer: dns.address, httpPort: http.port, tlsPort: 1 });
    t.teardown(() => pebble.stop());
    const root = await pebble.root();
    // The recipe's config.json, as variables (ports on loopback; Pebble for Let's Encrypt).
    const daemon = await bootDaemon(t, {
      db,
      env: {
        POSTERN_HOSTNAME: NAME,
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_HTTPS_ENABLED: 'true',
        POSTERN_HTTPS_HOST: '127.0.0.1',
        POSTERN_HTTPS_PORT: '0',
        POSTERN_ACME_ENABLED: 'true',
        POSTERN_ACME_EMAIL: 'ops@postern.test',
        POSTERN_ACME_DIRECTORY_URL: pebble.directoryUrl,
        POSTERN_ACME_CA_FILE: pebble.caFile,
        POSTERN_SUBMISSION_ENABLED: 'true',
      },
    });
    http.to(daemon.httpPort);
    await daemon.workspace('default');
    const cert = await until('the certificate for the box', async () => {
      const kept = (await daemon.app.certificates.list()).find((c) => c.name === NAME);
      return kept?.cert ?? false;
    });
    const base = daemon.app.publicUrl();
    const httpsPort = Number(new URL(base).port);
    t.equal(base, `https://${NAME}:${httpsPort}`, 'the public URL is the HTTPS one, by the host name');
    t.ok(await starttlsVerified(daemon.smtpPort, root), 'the MX presents the CA certificate on STARTTLS');

    // The browser resolves the box's name to loopback, and trusts the key of the certificate Pebble
    // issued as it would trust a public CA's (the certificate is then valid, not an ignored error).
    const spki = createHash('sha256')
      .update(new X509Certificate(cert).publicKey.export({ type: 'spki', format: 'der' }))
      .digest('base64');
    const browser = await launchBrowser(t, [
      `--host-resolver-rules=MAP ${NAME} 127.0.0.1`,
      `--ignore-certificate-errors-spki-list=${spki}`,
    ]);
    const context = await browser.newContext();
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.on('pageerror', (err) => t.fail(`error in the page: ${err.message}`));

    // Plain HTTP leads to HTTPS.
    await page.goto(`http://${NAME}:${daemon.httpPort}/dashboard/`);
    t.equal(new URL(page.url()).origin, base, 'HTTP redirects to the HTTPS listener');

    // The setup link the daemon names.
    const token = await daemon.app.operators.issueSetupToken();
    await page.goto(`${base}/dashboard/setup?token=${token}`);
    t.equal(await page.evaluate('window.isSecureContext'), true, 'a secure context: the certificate is valid for the name');
    await page.getByRole('heading', { name: 'Set up Postern' }).waitFor();
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password', { exact: true }).fill(OWNER.password);
    await page.getByLabel('Password again').fill(OWNER.password);
    await page.getByRole('button', { name: 'Create owner' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    await checkPage(t, page, 'fresh-vm-overview');

    // A passkey, on the HTTPS origin, then a sign-in with it alone.
    const { cdp, authenticatorId } = await virtualAuthenticator(context, page);
    await page.getByRole('link', { name: 'Account' }).click();
    const add = page.getByRole('form', { name: 'Add a passkey' });
    await add.getByLabel('Passkey name').fill('laptop');
    await add.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('row', { name: /laptop/ }).waitFor();
    const made = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
    t.equal(made[0]?.rpId, NAME, 'the passkey is bound to the box’s name');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    const audit = await daemon.app.audit.list({ operator: OWNER.email });
    t.ok(
      audit.data.some((e) => e.action === 'session.login' && e.target === 'passkey' && e.outcome === 'ok'),
      'signed in with the passkey, over HTTPS',
    );
  });
