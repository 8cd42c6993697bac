// The receiving side of MTA-STS: the policy file the daemon serves for each custom domain it
// receives for (Host: mta-sts.<domain>), read back with our own outbound MTA-STS parser as an
// independent reader; the mode set from the CLI changing the file and its TXT id; the records
// listed with the domain; and the doctor fetching the policy the way a sending MTA does, over HTTPS
// through a TLS-terminating proxy in front of the daemon's HTTP listener (the deployment
// docs/dns.md describes), with a certificate from a test CA the daemon is told to trust.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import t, { type Test } from 'tap';
import { parseStsPolicy, parseStsRecord } from '../../src/channels/email/mta-sts.js';
import type { Check } from '../../src/domains/doctor.js';
import { makeSelfSigned } from '../../src/smtp/self-signed.js';
import { testDatabases, type TestDb } from '../helpers/databases.js';
import { setup } from '../helpers/inbound.js';
import { makeTestCa, type TestCa } from '../helpers/self-signed.js';

const HOST = 'mx.postern.test';
const DOMAIN = 'acme.example';
const POLICY_PATH = '/.well-known/mta-sts.txt';

interface Answer {
  status: number;
  type: string | undefined;
  body: string;
}

/** GET /.well-known/mta-sts.txt from the daemon's HTTP listener with this Host header. */
function getPolicy(port: number, host: string, pathname = POLICY_PATH): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: pathname, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Proxy {
  port: number;
  /** Passes requests on to this HTTP port (the daemon's listener). */
  to(port: number): void;
  /** Answers this policy itself instead: another server holding mta-sts.<domain>. */
  impersonate(policy: string | null): void;
}

/** A TLS-terminating proxy on loopback: per server name a certificate from `ca`, requests passed on with their Host. */
async function startProxy(t: Test, ca: TestCa): Promise<Proxy> {
  let target = 0;
  let fake: string | null = null;
  const server: Server = createServer(
    {
      ...ca.issue(['mta-sts.invalid']),
      SNICallback: (servername, cb) => cb(null, createSecureContext(ca.issue([servername]))),
    },
    (req, res) => {
      if (fake !== null) return res.writeHead(200, { 'content-type': 'text/plain' }).end(fake);
      const upstream = httpRequest({ host: '127.0.0.1', port: target, path: req.url, method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return {
    port: (server.address() as AddressInfo).port,
    to: (port) => void (target = port),
    impersonate: (policy) => void (fake = policy),
  };
}

interface MtaStsInfo {
  mode: string;
  maxAge: number;
  policyId: string;
  url: string;
  served: boolean;
  records: { type: string; name: string; value: string; purpose: string }[];
}

/**
 * A daemon trusting the test CA for policy fetches (through the proxy's port), its SMTP certificate
 * issued by that CA for HOST (or self-signed), and acme.example claimed; `receive` publishes its MX
 * and DKIM and confirms them.
 */
async function boot(t: Test, db: TestDb, opts: { selfSigned?: boolean; receive?: boolean } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-mta-sts-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ca = makeTestCa();
  const proxy = await startProxy(t, ca);
  const smtpCert = opts.selfSigned ? makeSelfSigned(HOST, new Date()) : ca.issue([HOST]);
  writeFileSync(path.join(dir, 'ca.pem'), ca.cert);
  writeFileSync(path.join(dir, 'cert.pem'), smtpCert.cert);
  writeFileSync(path.join(dir, 'key.pem'), smtpCert.key);
  const e = await setup(t, {
    db,
    env: {
      POSTERN_DELIVERY_MTA_STS_PORT: String(proxy.port),
      POSTERN_DELIVERY_MTA_STS_ALLOW_PRIVATE: 'true',
      POSTERN_DELIVERY_TLS_CA_FILE: path.join(dir, 'ca.pem'),
      POSTERN_SMTP_TLS_CERT: path.join(dir, 'cert.pem'),
      POSTERN_SMTP_TLS_KEY: path.join(dir, 'key.pem'),
    },
  });
  proxy.to(e.d.httpPort);
  const claim = await e.d.request('POST', '/v1/inbound/domains', { key: e.ws.live, body: { domain: DOMAIN } });
  t.equal(claim.status, 201);
  const id = (claim.body as { id: string }).id;
  const domain = async () => {
    const r = await e.d.request('GET', `/v1/inbound/domains/${id}`, { key: e.ws.live });
    t.equal(r.status, 200);
    return r.body as { status: string; records: { type: string; value: string; check: string }[]; mtaSts: MtaStsInfo };
  };
  if (opts.receive !== false) {
    const dkim = (claim.body as { records: { type: string; value: string }[] }).records.find((r) => r.type === 'TXT')!.value;
    e.dns.set(DOMAIN, [{ type: 'MX', data: { preference: 10, exchange: HOST } }]);
    e.dns.set(`postern._domainkey.${DOMAIN}`, [{ type: 'TXT', data: dkim }]);
    t.equal((await domain()).status, 'verified');
  }
  // mta-sts.acme.example resolves to the proxy's address (loopback, allowed by ALLOW_PRIVATE).
  e.dns.set(`mta-sts.${DOMAIN}`, [{ type: 'A', data: '127.0.0.1' }]);
  const mtaSts = async (): Promise<Check> => {
    const report = await e.d.app.doctor.run({ domain: DOMAIN });
    return report.domains[0].checks.find((c) => c.name === 'mta-sts')!;
  };
  const setMode = async (mode: string) => {
    const r = await e.d.cli('domain', 'mta-sts', '--domain', DOMAIN, '--mode', mode);
    t.equal(r.code, 0, `mode ${mode}: ${r.stderr}`);
    return r.json as MtaStsInfo & { policy: string };
  };
  return { ...e, id, proxy, domain, mtaSts, setMode };
}

/** The served policy, read by the outbound client's parser under the id the records name. */
async function served(port: number, host: string, id: string) {
  const r = await getPolicy(port, host);
  return { ...r, policy: r.status === 200 ? parseStsPolicy(DOMAIN, id, r.body) : null };
}

const envelope404 = (t: Test, r: Answer, what: string) => {
  t.equal(r.status, 404, `${what}: 404`);
  t.match(JSON.parse(r.body), { error: { code: 'not_found', message: String } }, `${what}: the error envelope`);
};

for (const db of testDatabases()) {
  t.test(`the policy is served for a domain Postern receives for, and for no other host (${db})`, async (t) => {
    const e = await boot(t, db);
    const { mtaSts: info, records, status } = await e.domain();
    t.equal(status, 'verified', 'the MTA-STS records, unpublished, do not hold the domain up');
    t.same(
      records.map((r) => r.check),
      ['inboundMx', 'dkim'],
      "the interface's records stay the MX and DKIM ones",
    );
    t.match(info, { mode: 'testing', maxAge: 86400, served: true, url: `https://mta-sts.${DOMAIN}${POLICY_PATH}` });
    t.match(info.policyId, /^[A-Za-z0-9]{1,32}$/);
    t.same(
      info.records.map((r) => [r.type, r.name, r.value]),
      [
        ['TXT', `_mta-sts.${DOMAIN}`, `v=STSv1; id=${info.policyId}`],
        ['TXT', `_smtp._tls.${DOMAIN}`, 'v=TLSRPTv1; rua=mailto:reports@bounces.mx.postern.test'],
      ],
    );
    t.match(info.records[0].purpose, /mta-sts\.acme\.example must resolve to this server/);
    t.same(parseStsRecord([info.records[0].value]), { id: info.policyId }, 'the outbound client reads the TXT id');

    const r = await served(e.d.httpPort, `mta-sts.${DOMAIN}`, info.policyId);
    t.equal(r.status, 200);
    t.match(r.type, /^text\/plain\b/);
    t.equal(r.body, `version: STSv1\r\nmode: testing\r\nmx: ${HOST}\r\nmax_age: 86400\r\n`, 'lines ended by CRLF');
    t.same(r.policy, { domain: DOMAIN, id: info.policyId, mode: 'testing', mx: [HOST], maxAge: 86400 });
    const upper = await getPolicy(e.d.httpPort, `MTA-STS.Acme.Example:8443`);
    t.equal(upper.body, r.body, 'the Host in any case, with a port');
    const head = await new Promise<number>((resolve, reject) =>
      httpRequest(
        { host: '127.0.0.1', port: e.d.httpPort, path: POLICY_PATH, method: 'HEAD', headers: { host: `mta-sts.${DOMAIN}` } },
        (res) => resolve(res.statusCode ?? 0),
      )
        .on('error', reject)
        .end(),
    );
    t.equal(head, 200, 'HEAD answers too');

    // A pending claim (no MX found), unknown names, the domain itself, the shared domain, the address.
    t.equal((await e.d.request('POST', '/v1/inbound/domains', { key: e.ws.live, body: { domain: 'pending.example' } })).status, 201);
    for (const host of [
      'mta-sts.pending.example',
      'mta-sts.unknown.example',
      DOMAIN,
      `www.${DOMAIN}`,
      'mta-sts.acme.in.postern.test',
      `mta-sts.${HOST}`,
      `127.0.0.1:${e.d.httpPort}`,
    ])
      envelope404(t, await getPolicy(e.d.httpPort, host), host);
    envelope404(t, await getPolicy(e.d.httpPort, `mta-sts.${DOMAIN}`, '/.well-known/mta-sts.json'), 'another path');

    // A deleted domain stops being served.
    t.equal((await e.d.request('DELETE', `/v1/inbound/domains/${e.id}`, { key: e.ws.live })).status, 200);
    envelope404(t, await getPolicy(e.d.httpPort, `mta-sts.${DOMAIN}`), 'a deleted domain');
  });

  t.test(`a domain not yet receiving lists its records but serves nothing (${db})`, async (t) => {
    const e = await boot(t, db, { receive: false });
    const info = (await e.domain()).mtaSts;
    t.match(info, { mode: 'testing', served: false });
    t.equal(info.records.length, 2);
    envelope404(t, await getPolicy(e.d.httpPort, `mta-sts.${DOMAIN}`), 'pending');
    t.match(await e.mtaSts(), { status: 'pass', detail: /not published at _mta-sts\.acme\.example \(optional\)/ });
  });

  t.test(`the mode, set from the CLI, changes the file and its id at once (${db})`, async (t) => {
    const e = await boot(t, db);
    const first = (await e.domain()).mtaSts.policyId;
    const enforce = await e.setMode('enforce');
    t.match(enforce, { domain: DOMAIN, mode: 'enforce', maxAge: 604800, served: true });
    t.not(enforce.policyId, first, 'a new id for a new policy');
    const r = await served(e.d.httpPort, `mta-sts.${DOMAIN}`, enforce.policyId);
    t.same(r.policy, { domain: DOMAIN, id: enforce.policyId, mode: 'enforce', mx: [HOST], maxAge: 604800 }, 'served by the daemon');
    t.equal(r.body, enforce.policy, 'the CLI prints the file the daemon serves');
    const listed = (await e.domain()).mtaSts;
    t.equal(listed.policyId, enforce.policyId);
    t.equal(listed.records[0].value, `v=STSv1; id=${enforce.policyId}`);

    const none = await e.setMode('none');
    t.match((await served(e.d.httpPort, `mta-sts.${DOMAIN}`, none.policyId)).policy, { mode: 'none', maxAge: 86400 });
    t.not(none.policyId, enforce.policyId);
    t.equal((await e.setMode('testing')).policyId, first, 'the same policy has the same id');

    const bad = await e.d.cli('domain', 'mta-sts', '--domain', DOMAIN, '--mode', 'strict');
    t.equal(bad.code, 2);
    t.match(bad.stderr, /--mode must be one of testing, enforce, none/);
    const missing = await e.d.cli('domain', 'mta-sts', '--domain', DOMAIN);
    t.equal(missing.code, 2);
    const unknown = await e.d.cli('domain', 'mta-sts', '--domain', 'unknown.example', '--mode', 'enforce');
    t.not(unknown.code, 0);
    t.match(unknown.stderr, /custom domain not found/);
    const shared = await e.d.cli('domain', 'mta-sts', '--domain', 'acme.in.postern.test', '--mode', 'enforce');
    t.match(shared.stderr, /custom domain not found/, 'the shared domain has no policy of its own');
  });

  t.test(`the doctor fetches the served policy as a sender would and holds it to the records (${db})`, async (t) => {
    const e = await boot(t, db);
    t.match(await e.mtaSts(), {
      status: 'pass',
      detail: /not published at _mta-sts\.acme\.example \(optional\): Postern serves a testing policy/,
    });

    const id = (await e.domain()).mtaSts.policyId;
    e.dns.set(`_mta-sts.${DOMAIN}`, [{ type: 'TXT', data: `v=STSv1; id=${id}` }]);
    const pass = await e.mtaSts();
    t.match(pass, {
      status: 'pass',
      detail: /serves Postern's policy \(mode testing, mx mx\.postern\.test, max_age 86400\); the MX certificate names mx\.postern\.test/,
    });
    t.notOk(pass.fix);

    // Enforce: the published id is now stale.
    const enforce = await e.setMode('enforce');
    const stale = await e.mtaSts();
    t.match(stale, { status: 'fail', detail: new RegExp(`id ${enforce.policyId}`) });
    t.same(
      stale.fix,
      { type: 'TXT', name: `_mta-sts.${DOMAIN}`, value: `v=STSv1; id=${enforce.policyId}` },
      'the fix is the listed record',
    );
    e.dns.set(`_mta-sts.${DOMAIN}`, [{ type: 'TXT', data: stale.fix!.value }]);
    t.match(await e.mtaSts(), { status: 'pass', detail: /mode enforce/ });

    // An MX host the policy does not name: enforce fails, testing warns.
    e.dns.set(DOMAIN, [
      { type: 'MX', data: { preference: 10, exchange: HOST } },
      { type: 'MX', data: { preference: 20, exchange: 'backup.example.net' } },
    ]);
    t.match(await e.mtaSts(), { status: 'fail', detail: /does not cover backup\.example\.net.*refuse to deliver/ });
    const testing = await e.setMode('testing');
    e.dns.set(`_mta-sts.${DOMAIN}`, [{ type: 'TXT', data: `v=STSv1; id=${testing.policyId}` }]);
    t.match(await e.mtaSts(), { status: 'warn', detail: /does not cover backup\.example\.net.*report each failure/ });
    e.dns.set(DOMAIN, [{ type: 'MX', data: { preference: 10, exchange: HOST } }]);

    // Another server answering for mta-sts.acme.example.
    e.proxy.impersonate(`version: STSv1\r\nmode: enforce\r\nmx: mail.elsewhere.example\r\nmax_age: 86400\r\n`);
    t.match(await e.mtaSts(), {
      status: 'fail',
      detail: /serves mode enforce, mx mail\.elsewhere\.example, max_age 86400, not the policy Postern serves \(mode testing/,
    });
    e.proxy.impersonate(null);

    // Nothing at mta-sts.acme.example.
    e.dns.remove(`mta-sts.${DOMAIN}`);
    t.match(await e.mtaSts(), { status: 'fail', detail: /cannot be fetched as senders fetch it \(fetch failed: ENOTFOUND\)/ });
    e.dns.set(`mta-sts.${DOMAIN}`, [{ type: 'A', data: '127.0.0.1' }]);
    t.match(await e.mtaSts(), { status: 'pass' });

    // Two records, and a broken one.
    e.dns.set(`_mta-sts.${DOMAIN}`, [
      { type: 'TXT', data: `v=STSv1; id=${testing.policyId}` },
      { type: 'TXT', data: 'v=STSv1; id=other' },
    ]);
    t.match(await e.mtaSts(), { status: 'fail', detail: /2 records are published/ });

    // The API's checks of the domain say the same.
    e.dns.set(`_mta-sts.${DOMAIN}`, [{ type: 'TXT', data: `v=STSv1; id=${testing.policyId}` }]);
    const api = await e.d.request('GET', `/v1/inbound/domains/${e.id}/checks`, { key: e.ws.live });
    t.match(
      api.body.checks.find((c: Check) => c.name === 'mta-sts'),
      { status: 'pass' },
    );
  });

  t.test(`a self-signed MX certificate does not meet the policy: enforce fails, testing warns (${db})`, async (t) => {
    const e = await boot(t, db, { selfSigned: true });
    const testing = (await e.domain()).mtaSts.policyId;
    e.dns.set(`_mta-sts.${DOMAIN}`, [{ type: 'TXT', data: `v=STSv1; id=${testing}` }]);
    t.match(await e.mtaSts(), {
      status: 'warn',
      detail: /MX certificate does not meet it \(certificate check: the SMTP certificate is self-signed/,
    });
    const enforce = await e.setMode('enforce');
    e.dns.set(`_mta-sts.${DOMAIN}`, [{ type: 'TXT', data: `v=STSv1; id=${enforce.policyId}` }]);
    t.match(await e.mtaSts(), { status: 'fail', detail: /self-signed.*refuse to deliver/ });
    const none = await e.setMode('none');
    e.dns.set(`_mta-sts.${DOMAIN}`, [{ type: 'TXT', data: `v=STSv1; id=${none.policyId}` }]);
    t.match(await e.mtaSts(), { status: 'pass', detail: /withdrawn/ });
  });
}
