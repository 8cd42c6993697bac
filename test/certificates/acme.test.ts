// Certificates from ACME, end to end against Pebble (Let's Encrypt's test CA) on loopback: the CA
// validates over the daemon's own HTTP listener (HTTP-01) or its HTTPS listener (TLS-ALPN-01); the
// certificate it issues is then what HTTPS and SMTP STARTTLS present, checked by TLS clients that
// trust Pebble's root alone. Renewal when due (the daemon's clock moved to 29 days before expiry),
// revocation (Pebble says Revoked), a failed challenge (the name does not resolve: kept with its
// reason, shown in /readyz and the metrics, retried after a back-off) and two nodes of a cluster
// racing for the same name (one order; both serve its result).
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { X509Certificate } from 'node:crypto';
import t, { type Test } from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { dashboardLogin } from '../helpers/dashboard.js';
import { freshPostgres, testDatabases } from '../helpers/databases.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { startForwarder, startPebble, type Pebble } from '../helpers/pebble.js';
import { starttls } from '../helpers/starttls.js';
import { until } from '../helpers/until.js';

const NAME = 'mx.postern.test';
const DOMAIN = 'acme.example';

/** The certificate a TLS server presents for `servername` (none: no SNI), verified against `ca`. */
function presented(
  port: number,
  opts: { servername?: string; ca: string; alpn?: string[] },
): Promise<{ cert: X509Certificate; authorized: boolean; error: string | null }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port,
      ca: opts.ca,
      rejectUnauthorized: false,
      checkServerIdentity: () => undefined,
      ...(opts.servername ? { servername: opts.servername } : {}),
      ...(opts.alpn ? { ALPNProtocols: opts.alpn } : {}),
    });
    socket.once('secureConnect', () => {
      const raw = socket.getPeerX509Certificate();
      const error = socket.authorizationError ? String(socket.authorizationError) : null;
      // The name is checked as a client would: against the name it asked for.
      const nameOk = raw?.checkHost(opts.servername ?? NAME) !== undefined;
      socket.end();
      resolve({ cert: raw!, authorized: socket.authorized && nameOk, error: error ?? (nameOk ? null : 'the name does not match') });
    });
    socket.once('error', reject);
  });
}

/** STARTTLS on the SMTP listener, then the certificate presented (verified against `ca`, for NAME). */
async function smtpCertificate(
  port: number,
  ca: string,
  servername?: string,
): Promise<{ cert: X509Certificate; authorized: boolean; protocol: string | null }> {
  const plain = await starttls(port);
  return new Promise((resolve, reject) => {
    // The name is checked below, as for HTTPS; Node would check `localhost` against it here.
    const secure = tls.connect({
      socket: plain,
      ca,
      rejectUnauthorized: false,
      checkServerIdentity: () => undefined,
      ...(servername ? { servername } : {}),
    });
    secure.once('secureConnect', () => {
      const cert = secure.getPeerX509Certificate()!;
      const out = { cert, authorized: secure.authorized && cert.checkHost(NAME) !== undefined, protocol: secure.getProtocol() };
      secure.end('QUIT\r\n');
      resolve(out);
    });
    secure.once('error', reject);
  });
}

interface Setup {
  dns: DnsServer;
  pebble: Pebble;
  daemon: TestDaemon;
  root: string;
}

async function setup(
  t: Test,
  opts: { challenge?: 'http-01' | 'tls-alpn-01'; databaseUrl?: string; resolves?: boolean; env?: Record<string, string> } = {},
): Promise<Setup> {
  const dns = await startDnsServer(opts.resolves === false ? {} : { [NAME]: [{ type: 'A', data: '127.0.0.1' }] });
  t.teardown(() => dns.close());
  const http = await startForwarder(t);
  const https = await startForwarder(t);
  const pebble = await startPebble({ dnsServer: dns.address, httpPort: http.port, tlsPort: https.port });
  t.teardown(() => pebble.stop());
  const root = await pebble.root();
  const rootFile = path.join(mkdtempSync(path.join(tmpdir(), 'pebble-root-')), 'root.pem');
  writeFileSync(rootFile, root);
  const daemon = await bootDaemon(t, {
    ...(opts.databaseUrl ? { databaseUrl: opts.databaseUrl } : {}),
    env: {
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_ACME_ENABLED: 'true',
      POSTERN_ACME_DIRECTORY_URL: pebble.directoryUrl,
      POSTERN_ACME_CA_FILE: pebble.caFile,
      POSTERN_ACME_CHALLENGE: opts.challenge ?? 'http-01',
      POSTERN_ACME_EMAIL: 'ops@postern.test',
      // The daemon's own schedule stays out of the way: each test says when to check.
      POSTERN_ACME_CHECK_INTERVAL: '1d',
      POSTERN_HTTPS_ENABLED: 'true',
      POSTERN_HTTPS_HOST: '127.0.0.1',
      POSTERN_HTTPS_PORT: '0',
      // The doctor fetches MTA-STS policies as senders do: over HTTPS on "443" (the forwarder to
      // the daemon's HTTPS listener), trusting Pebble's root as senders trust a public CA.
      POSTERN_DELIVERY_MTA_STS_PORT: String(https.port),
      POSTERN_DELIVERY_MTA_STS_ALLOW_PRIVATE: 'true',
      POSTERN_DELIVERY_TLS_CA_FILE: rootFile,
      ...opts.env,
    },
  });
  http.to(daemon.httpPort);
  https.to(httpsPortOf(daemon));
  return { dns, pebble, daemon, root };
}

const httpsPortOf = (d: TestDaemon) => Number(new URL(d.app.publicUrl()).port || 443);
const serialOf = (cert: X509Certificate) => cert.serialNumber.replace(/^0+/, '');
const kept = async (d: TestDaemon) =>
  (
    (await d.cli('certificate', 'list')).json as {
      name: string;
      notAfter: string | null;
      failures: number;
      lastError: string | null;
      nextAttemptAt: string | null;
    }[]
  ).find((c) => c.name === NAME);

for (const db of testDatabases()) {
  t.test(`${db}: HTTP-01 issues the certificate HTTPS and STARTTLS present; it renews when due and revokes`, async (t) => {
    const pg = db === 'postgres' ? await freshPostgres() : null;
    if (pg) t.teardown(() => pg.drop());
    const { daemon, pebble, root } = await setup(t, pg ? { databaseUrl: pg.url } : {});
    const first = await until('the certificate to be obtained at start', async () => (await kept(daemon))?.notAfter ?? false);
    const httpsPort = httpsPortOf(daemon);

    const web = await presented(httpsPort, { servername: NAME, ca: root });
    t.ok(web.authorized, `HTTPS presents a certificate for ${NAME} that Pebble's root verifies (${web.error ?? 'ok'})`);
    t.equal(web.cert.validTo && new Date(web.cert.validTo).toISOString(), first, 'the one kept in the database');
    const noSni = await presented(httpsPort, { ca: root });
    t.equal(serialOf(noSni.cert), serialOf(web.cert), 'a client naming no host gets the same certificate');
    const mail = await smtpCertificate(daemon.smtpPort, root);
    t.ok(mail.authorized, 'SMTP STARTTLS presents it too, to a client that names no host');
    t.equal(serialOf(mail.cert), serialOf(web.cert));
    t.ok(mail.protocol === 'TLSv1.3' || mail.protocol === 'TLSv1.2', `STARTTLS negotiated ${mail.protocol}`);

    // HTTPS serves the API; HTTP redirects, except health probes, ACME and MTA-STS.
    const viaHttps = await fetchInsecure(`https://127.0.0.1:${httpsPort}/readyz`, root, NAME);
    t.equal(viaHttps.status, 200, 'GET /readyz over HTTPS');
    t.same(viaHttps.body.checks.certificates, [], 'no certificate problem in /readyz');
    const redirected = await plainGet(daemon.httpPort, '/dashboard/?a=1', NAME);
    t.equal(redirected.status, 308, 'plain HTTP is redirected');
    t.equal(redirected.location, `https://${NAME}:${httpsPort}/dashboard/?a=1`);
    t.equal((await fetch(`${daemon.url}/healthz`, { redirect: 'manual' })).status, 200, '/healthz answers over HTTP');
    const sts = await plainGet(daemon.httpPort, '/.well-known/mta-sts.txt', 'mta-sts.example.test');
    t.equal(sts.status, 404, 'MTA-STS is answered over HTTP, not redirected');
    const challenge = await fetch(`${daemon.url}/.well-known/acme-challenge/unknown-token`, { redirect: 'manual' });
    t.equal(challenge.status, 404, 'an unknown ACME token is 404, not a redirect');
    t.equal(((await challenge.json()) as { error: { code: string } }).error.code, 'not_found');
    t.match(daemon.app.publicUrl(), `https://${NAME}:${httpsPort}`, 'links name the HTTPS listener');

    // Not due: a check does nothing. 29 days before expiry: it renews, and the new one is served.
    t.same(
      (await daemon.app.certificates.check()).map((r) => r.outcome),
      ['not-due'],
    );
    daemon.clock.set(new Date(Date.parse(first) - 29 * 86_400_000));
    t.same(
      (await daemon.app.certificates.check()).map((r) => r.outcome),
      ['issued'],
      'renewed within acme.renewBefore of expiry',
    );
    const renewed = await presented(httpsPort, { servername: NAME, ca: root });
    t.not(serialOf(renewed.cert), serialOf(web.cert), 'HTTPS presents the renewed certificate at once');
    t.equal(serialOf((await smtpCertificate(daemon.smtpPort, root)).cert), serialOf(renewed.cert), 'and so does STARTTLS');

    // The CLI below runs on the real clock; the daemon answering the CA's request goes back to it.
    daemon.clock.set(Date.now());
    // Revoked: Pebble says so, the certificate is dropped, and the next check obtains a new one.
    const revoked = await daemon.cli('certificate', 'revoke', '--name', NAME);
    t.equal(revoked.code, 0, revoked.stderr);
    t.equal(await pebble.status(serialOf(renewed.cert)), 'Revoked', 'the CA lists it as revoked');
    t.equal((await kept(daemon))?.notAfter, null, 'no certificate is kept for the name');
    const again = await daemon.cli('certificate', 'renew');
    t.equal(again.code, 0, again.stderr);
    t.same(
      again.json.map((r: { outcome: string }) => r.outcome),
      ['issued'],
    );
    await until(
      'the new certificate to be served',
      async () => serialOf((await presented(httpsPort, { servername: NAME, ca: root })).cert) !== serialOf(renewed.cert),
    );
  });
}

/** GET over plain HTTP with the Host header given (fetch will not send one of its own). */
function plainGet(port: number, path: string, host: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode!, location: res.headers.location });
    });
    req.on('error', reject);
  });
}

/** GET /.well-known/mta-sts.txt over HTTPS as a sender does: SNI and Host the policy host, verified against `ca`. */
function policyOverHttps(port: number, host: string, ca: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path: '/.well-known/mta-sts.txt', servername: host, ca, headers: { host } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
  });
}

/** A request over HTTPS to 127.0.0.1, verified for `servername` against `ca`. */
async function fetchInsecure(url: string, ca: string, servername: string): Promise<{ status: number; body: any }> {
  const { Agent, fetch: f } = await import('undici');
  const agent = new Agent({ connect: { ca, servername } });
  try {
    const r = await f(url, { dispatcher: agent });
    return { status: r.status, body: await r.json() };
  } finally {
    await agent.close();
  }
}

t.test('mta-sts.<domain> gets its certificate: the policy is served over HTTPS as senders fetch it', async (t) => {
  // The test's API calls go over plain HTTP (the helper's client), so it is not redirected here.
  const { daemon, dns, root } = await setup(t, { env: { POSTERN_HTTPS_REDIRECT_HTTP: 'false' } });
  await until('the hostname’s certificate', async () => (await kept(daemon))?.notAfter ?? false);
  const ws = await daemon.workspace('acme', { plan: 'custom' });
  const claim = await daemon.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: DOMAIN } });
  t.equal(claim.status, 201);
  const dkim = (claim.body as { records: { type: string; value: string }[] }).records.find((r) => r.type === 'TXT')!.value;
  dns.set(DOMAIN, [{ type: 'MX', data: { preference: 10, exchange: NAME } }]);
  dns.set(`postern._domainkey.${DOMAIN}`, [{ type: 'TXT', data: dkim }]);
  dns.set(`mta-sts.${DOMAIN}`, [{ type: 'A', data: '127.0.0.1' }]);
  const domain = await daemon.request('GET', `/v1/inbound/domains/${(claim.body as { id: string }).id}`, { key: ws.live });
  t.equal(domain.body.status, 'verified');
  dns.set(`_mta-sts.${DOMAIN}`, [{ type: 'TXT', data: `v=STSv1; id=${domain.body.mtaSts.policyId}` }]);

  t.same(await daemon.app.certificates.wanted(), [`mta-sts.${DOMAIN}`, NAME], 'the policy host is wanted once the domain receives');
  const results = await daemon.app.certificates.check();
  t.same(
    results.map((r) => [r.name, r.outcome]),
    [
      [`mta-sts.${DOMAIN}`, 'issued'],
      [NAME, 'not-due'],
    ],
  );
  const policyHost = await presented(httpsPortOf(daemon), { servername: `mta-sts.${DOMAIN}`, ca: root });
  t.ok(policyHost.authorized, `HTTPS presents a certificate for mta-sts.${DOMAIN}`);
  const policy = await policyOverHttps(httpsPortOf(daemon), `mta-sts.${DOMAIN}`, root);
  t.equal(policy.status, 200);
  t.equal(policy.text, `version: STSv1\r\nmode: testing\r\nmx: ${NAME}\r\nmax_age: 86400\r\n`);
  const report = await daemon.app.doctor.run({ domain: DOMAIN });
  t.match(
    report.domains[0].checks.find((c) => c.name === 'mta-sts'),
    {
      status: 'pass',
      detail: new RegExp(`serves Postern's policy .*; the MX certificate names ${NAME.replace(/\./g, '\\.')}`),
    },
  );
});

t.test('a failed challenge is kept with its reason, shown in /readyz and the metrics, and retried after a back-off', async (t) => {
  // The dashboard client below speaks plain HTTP: not redirected here.
  const { daemon, dns, root } = await setup(t, { resolves: false, env: { POSTERN_HTTPS_REDIRECT_HTTP: 'false' } });
  const failing = await until('the first attempt to fail', async () => {
    const k = await kept(daemon);
    return k && k.failures > 0 ? k : false;
  });
  t.match(failing.lastError, /.+/, `the CA's reason is kept: ${failing.lastError}`);
  t.ok(failing.nextAttemptAt && failing.nextAttemptAt > daemon.clock.now().toISOString(), 'the next attempt waits');
  const ready = await daemon.request('GET', '/readyz');
  t.equal(ready.status, 200, 'still ready: the fallback certificate is served meanwhile');
  t.match(ready.body.checks.certificates, [{ name: NAME, kind: 'failing', failures: 1 }]);
  const metrics = await (await fetch(`http://127.0.0.1:${daemon.metricsPort}/metrics`)).text();
  t.match(metrics, new RegExp(`postern_certificate_renewal_failures\\{name="${NAME.replace(/\./g, '\\.')}",scope="cluster"\\} 1`));
  const ws = await daemon.workspace('acme');
  const dashboard = await dashboardLogin(daemon);
  await dashboard.select(ws.id, 'live');
  const overview = await dashboard.request('GET', '/dashboard/api/overview');
  t.match(
    overview.body.warnings,
    [{ kind: 'certificate', message: new RegExp(`^Obtaining the certificate for ${NAME.replace(/\./g, '\\.')} failed 1 time `) }],
    'the Overview warns of it',
  );
  t.same(
    (await daemon.app.certificates.check()).map((r) => r.outcome),
    ['elsewhere'],
    'during the back-off a check does not ask the CA',
  );
  const cli = await daemon.cli('certificate', 'renew');
  t.equal(cli.code, 0, 'nothing due now is not a failure');

  dns.set(NAME, [{ type: 'A', data: '127.0.0.1' }]);
  daemon.clock.advance(61_000);
  t.same(
    (await daemon.app.certificates.check()).map((r) => r.outcome),
    ['issued'],
    'after the back-off it is obtained',
  );
  t.same((await daemon.request('GET', '/readyz')).body.checks.certificates, [], 'and the problem is gone');
  t.ok((await presented(httpsPortOf(daemon), { servername: NAME, ca: root })).authorized);
});

t.test('TLS-ALPN-01: the CA validates on the HTTPS listener, whose other clients keep their certificate', async (t) => {
  const { daemon, root } = await setup(t, { challenge: 'tls-alpn-01', env: { POSTERN_HTTPS_REDIRECT_HTTP: 'false' } });
  await until('the certificate to be obtained over TLS-ALPN-01', async () => (await kept(daemon))?.notAfter ?? false);
  const web = await presented(httpsPortOf(daemon), { servername: NAME, ca: root, alpn: ['h2', 'http/1.1'] });
  t.ok(web.authorized, 'HTTPS presents it');
  const viaHttps = await fetchInsecure(`https://127.0.0.1:${httpsPortOf(daemon)}/healthz`, root, NAME);
  t.equal(viaHttps.status, 200, 'a request through the ClientHello reader is served');
  const plain = await fetch(`${daemon.url}/healthz`, { redirect: 'manual' });
  t.equal(plain.status, 200, 'https.redirectHttp off: plain HTTP is served');
});

t.test(
  'two nodes racing for one name: one order, and both serve its certificate',
  { skip: !process.env.POSTERN_TEST_DATABASE_URL && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const pg = await freshPostgres();
    t.teardown(() => pg.drop());
    const { daemon: a, root, pebble } = await setup(t, { databaseUrl: pg.url, env: { POSTERN_ACME_RELOAD_INTERVAL: '1s' } });
    const b = await bootDaemon(t, { databaseUrl: pg.url, env: { ...a.env, POSTERN_HTTPS_PORT: '0' } });
    await until('the first certificate', async () => (await kept(a))?.notAfter ?? false);
    // Both nodes find the certificate due at the same moment (their clocks 29 days before expiry).
    const first = (await kept(a))!.notAfter!;
    for (const d of [a, b]) d.clock.set(new Date(Date.parse(first) - 29 * 86_400_000));
    const both = await Promise.all([a.app.certificates.check(), b.app.certificates.check()]);
    const outcomes = both.map((r) => r[0].outcome);
    t.equal(outcomes.filter((o) => o === 'issued').length, 1, `one node renews (${outcomes.join(', ')})`);
    t.ok(
      outcomes.every((o) => o === 'issued' || o === 'elsewhere' || o === 'not-due'),
      'the other finds the lease taken, or the certificate renewed already',
    );
    const serial = await until('both nodes to serve the same certificate', async () => {
      const [x, y] = await Promise.all([a, b].map((d) => presented(httpsPortOf(d), { servername: NAME, ca: root })));
      return serialOf(x.cert) === serialOf(y.cert) && x.authorized && y.authorized ? serialOf(x.cert) : false;
    });
    t.equal(await pebble.status(serial), 'Valid');
    const obtained = [...a.logs, ...b.logs].filter((l) => l.includes('"certificate obtained"'));
    t.equal(obtained.length, 2, 'two orders in all: the first at start, one renewal');
  },
);
