// The doctor's checks against the loopback DNS server, with every record right, missing and wrong:
// each check's status, and the record it proposes (the same one the claim lists). Then the API
// route: scopes, the shared domain and unknown ids.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import type { Check, DomainChecks } from '../../src/domains/doctor.js';
import { reverseName } from '../../src/domains/doctor.js';
import { countSpfLookups, withAddresses } from '../../src/domains/spf-check.js';
import { createResolver } from '../../src/lib/dns.js';
import { setup, type InboundEnv } from '../helpers/inbound.js';
import { testDatabases, type TestDb } from '../helpers/databases.js';
import { loadConfig } from '../../src/config.js';
import { makeSelfSigned } from '../../src/smtp/self-signed.js';
import { makeTestCa } from '../helpers/self-signed.js';

const IP4 = '203.0.113.10';
const IP6 = '2001:db8::10';
const HOST = 'mx.postern.test';
const BOUNCE = 'bounces.mx.postern.test';
const DAY = 24 * 3600 * 1000;

const byName = (checks: Check[]) => Object.fromEntries(checks.map((c) => [c.name, c]));
const statuses = (checks: Check[]) => Object.fromEntries(checks.map((c) => [c.name, c.status]));

/** A daemon whose public addresses are IP4 and IP6, with a CA-issued certificate for `certNames`. */
async function boot(t: Test, opts: { db?: TestDb; publicIps?: string; certNames?: string[]; selfSigned?: boolean } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-doctor-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const env: Record<string, string> = { POSTERN_DOCTOR_PUBLIC_IPS: opts.publicIps ?? `${IP4},${IP6}` };
  if (opts.certNames || opts.selfSigned) {
    const issued = opts.certNames ? makeTestCa().issue(opts.certNames) : makeSelfSigned(HOST, new Date());
    writeFileSync(path.join(dir, 'cert.pem'), issued.cert);
    writeFileSync(path.join(dir, 'key.pem'), issued.key);
    env.POSTERN_SMTP_TLS_CERT = path.join(dir, 'cert.pem');
    env.POSTERN_SMTP_TLS_KEY = path.join(dir, 'key.pem');
  }
  const e = await setup(t, { db: opts.db, env });
  const claim = await e.d.request('POST', '/v1/inbound/domains', {
    key: e.ws.live,
    body: { domain: 'acme.example', acknowledgeExistingMx: true },
  });
  t.equal(claim.status, 201);
  return { ...e, claim: claim.body as { id: string; records: { type: string; name: string; value: string }[] } };
}

/** Every record published as it should be. */
function publishRight(e: InboundEnv, dkimValue: string) {
  const { dns } = e;
  dns.set('acme.example', [
    { type: 'MX', data: { preference: 10, exchange: HOST } },
    { type: 'TXT', data: `v=spf1 ip4:${IP4} ip6:${IP6} -all` },
  ]);
  dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: dkimValue }]);
  dns.set('_dmarc.acme.example', [{ type: 'TXT', data: 'v=DMARC1; p=reject; rua=mailto:d@acme.example' }]);
  dns.set('_mta-sts.acme.example', [{ type: 'TXT', data: 'v=STSv1; id=20260101' }]);
  dns.set('_smtp._tls.acme.example', [{ type: 'TXT', data: 'v=TLSRPTv1; rua=mailto:tls@acme.example' }]);
  dns.set(reverseName(IP4), [{ type: 'PTR', data: HOST }]);
  dns.set(reverseName(IP6), [{ type: 'PTR', data: HOST }]);
  dns.set(HOST, [
    { type: 'A', data: IP4 },
    { type: 'AAAA', data: IP6 },
  ]);
  dns.set(BOUNCE, [
    { type: 'MX', data: { preference: 10, exchange: HOST } },
    { type: 'TXT', data: `v=spf1 a:${HOST} -all` },
  ]);
  // The domain's own return path: SPF aligns with acme.example.
  dns.set('bounces.acme.example', [
    { type: 'MX', data: { preference: 10, exchange: HOST } },
    { type: 'TXT', data: `v=spf1 ip4:${IP4} ip6:${IP6} -all` },
  ]);
}

for (const db of testDatabases()) {
  t.test(`reverse names (${db})`, async (t) => {
    t.equal(reverseName('203.0.113.10'), '10.113.0.203.in-addr.arpa');
    t.equal(reverseName('2001:db8::10'), '0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa');
    t.equal(withAddresses('v=spf1 a ~all', ['192.0.2.1', '2001:db8::1']), 'v=spf1 a ip4:192.0.2.1 ip6:2001:db8::1 ~all');
    t.equal(withAddresses('v=spf1 mx redirect=x.example', ['192.0.2.1']), 'v=spf1 mx ip4:192.0.2.1 redirect=x.example');
    t.equal(withAddresses('v=spf1 mx', ['192.0.2.1']), 'v=spf1 mx ip4:192.0.2.1');
  });

  t.test(`records right: every check passes (${db})`, async (t) => {
    const e = await boot(t, { db, certNames: [HOST] });
    const dkim = e.claim.records.find((r) => r.type === 'TXT')!.value;
    publishRight(e, dkim);
    const report = await e.d.app.doctor.run();
    t.same(statuses(report.host), {
      'public-addresses': 'pass',
      fcrdns: 'pass',
      certificate: 'pass',
      'bounce-mx': 'pass',
      'bounce-spf': 'pass',
    });
    t.equal(report.host.filter((c) => c.name === 'fcrdns').length, 2, 'one reverse-DNS check per public address');
    t.equal(report.domains.length, 1);
    const domain = report.domains[0];
    t.match(domain, { id: e.claim.id, domain: 'acme.example', workspace: 'acme', status: 'pass' });
    t.same(statuses(domain.checks), {
      mx: 'pass',
      spf: 'pass',
      dkim: 'pass',
      dmarc: 'pass',
      'mta-sts': 'pass',
      'tls-rpt': 'pass',
      'return-path-mx': 'pass',
      'return-path-spf': 'pass',
    });
    const checks = byName(domain.checks);
    t.match(checks.spf.detail, /authorises 203\.0\.113\.10, 2001:db8::10 \(0 of 10 lookups\)/);
    t.match(
      checks.dmarc.detail,
      /p=reject; aligned through DKIM \(d=acme\.example\); SPF aligned too \(envelope sender on bounces\.acme\.example\)/,
    );
    t.match(checks['mta-sts'].detail, /id=20260101/);
    t.equal(report.status, 'pass');
    t.notOk(
      [...report.host, ...domain.checks].some((c) => c.fix),
      'nothing to fix',
    );

    // The certificate's expiry, on the daemon's clock: under 14 days warns, past it fails.
    e.d.clock.advance(360 * DAY);
    t.match(byName((await e.d.app.doctor.run()).host).certificate, { status: 'warn', detail: /expires on/ });
    e.d.clock.advance(10 * DAY);
    t.match(byName((await e.d.app.doctor.run()).host).certificate, { status: 'fail', detail: /expired on/ });
  });

  t.test(`records missing: fail (or warn) with the record to publish (${db})`, async (t) => {
    const e = await boot(t, { db });
    const dkim = e.claim.records.find((r) => r.type === 'TXT')!;
    const report = await e.d.app.doctor.run();
    const host = byName(report.host);
    t.match(
      report.host.find((c) => c.name === 'fcrdns'),
      { status: 'fail', fix: { type: 'PTR', name: reverseName(IP4), value: HOST } },
    );
    t.match(host.certificate, { status: 'warn', detail: /self-signed/ }, 'the generated certificate');
    t.match(host['bounce-mx'], { status: 'fail', fix: { type: 'MX', name: BOUNCE, value: `10 ${HOST}` } });
    t.match(host['bounce-spf'], { status: 'fail', fix: { type: 'TXT', name: BOUNCE, value: `v=spf1 ip4:${IP4} ip6:${IP6} -all` } });
    const checks = byName(report.domains[0].checks);
    t.match(checks.mx, { status: 'warn', detail: /no MX record/, fix: { type: 'MX', name: 'acme.example', value: `10 ${HOST}` } });
    t.match(checks.spf, { status: 'fail', fix: { type: 'TXT', name: 'acme.example', value: `v=spf1 ip4:${IP4} ip6:${IP6} -all` } });
    t.same(checks.dkim.fix, { type: 'TXT', name: dkim.name, value: dkim.value }, 'the DKIM fix is the record the claim lists');
    t.equal(checks.dkim.status, 'fail');
    t.match(checks.dmarc, { status: 'fail', fix: { type: 'TXT', name: '_dmarc.acme.example', value: /^v=DMARC1; p=none/ } });
    t.match(checks['mta-sts'], { status: 'pass', detail: /not published/ });
    // The return path is optional: a warning with the records that would align SPF.
    t.match(checks['return-path-mx'], {
      status: 'warn',
      detail: /optional: with it, SPF aligns with acme\.example/,
      fix: { type: 'MX', name: 'bounces.acme.example', value: `10 ${HOST}` },
    });
    t.match(checks['return-path-spf'], {
      status: 'warn',
      fix: { type: 'TXT', name: 'bounces.acme.example', value: `v=spf1 ip4:${IP4} ip6:${IP6} -all` },
    });
    t.match(checks['tls-rpt'], { status: 'pass', detail: /not published/ });
    t.equal(report.status, 'fail');

    // The domain's MX confirmed, then removed: mail no longer reaches Postern, which fails.
    e.dns.set('acme.example', [{ type: 'MX', data: { preference: 10, exchange: HOST } }]);
    await e.d.request('GET', `/v1/inbound/domains/${e.claim.id}`, { key: e.ws.live });
    e.dns.remove('acme.example');
    t.match(byName((await e.d.app.doctor.run()).domains[0].checks).mx, { status: 'fail', detail: /does not reach Postern/ });
  });

  t.test(`records wrong: each fails and says why (${db})`, async (t) => {
    const e = await boot(t, { db, certNames: ['other.example'] });
    const dkim = e.claim.records.find((r) => r.type === 'TXT')!;
    publishRight(e, dkim.value);
    const { dns } = e;
    dns.set('acme.example', [
      { type: 'MX', data: { preference: 10, exchange: 'mx.elsewhere.example' } },
      { type: 'TXT', data: `v=spf1 ip4:198.51.100.1 -all` },
    ]);
    dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: 'v=DKIM1; k=rsa; p=MIIBIjANotTheKey' }]);
    dns.set('_dmarc.acme.example', [{ type: 'TXT', data: 'v=DMARC1; p=sometimes' }]);
    dns.set('_mta-sts.acme.example', [{ type: 'TXT', data: 'v=STSv1; id=not-valid!' }]);
    dns.set('_smtp._tls.acme.example', [{ type: 'TXT', data: 'v=TLSRPTv1; rua=ftp://reports.example' }]);
    dns.set(reverseName(IP4), [{ type: 'PTR', data: 'host-203-0-113-10.isp.example' }]);
    dns.set(HOST, [
      { type: 'A', data: '192.0.2.99' },
      { type: 'AAAA', data: IP6 },
    ]);
    const report = await e.d.app.doctor.run({ domain: 'ACME.example' });
    const host = report.host;
    const fcrdns = host.filter((c) => c.name === 'fcrdns');
    t.match(fcrdns[0], { status: 'fail', detail: /names host-203-0-113-10\.isp\.example, not mx\.postern\.test/ });
    t.match(fcrdns[1], { status: 'pass' }, 'the IPv6 address is right');
    t.match(byName(host).certificate, { status: 'fail', detail: /names DNS:other\.example, not mx\.postern\.test/ });
    t.match(
      byName(host)['bounce-spf'],
      { status: 'fail', detail: /does not authorise 203\.0\.113\.10 \(fail\)/ },
      'a:HOST no longer covers IP4',
    );
    const checks = byName(report.domains[0].checks);
    t.match(checks.mx, { status: 'warn', detail: /points at mx\.elsewhere\.example/ });
    t.match(checks.spf, {
      status: 'fail',
      detail: /does not authorise 203\.0\.113\.10 \(fail\), 2001:db8::10 \(fail\)/,
      fix: { value: `v=spf1 ip4:198.51.100.1 ip4:${IP4} ip6:${IP6} -all` },
    });
    t.match(checks.dkim, { status: 'fail', detail: /another key/, fix: { value: dkim.value } });
    t.match(checks.dmarc, { status: 'fail', detail: /no valid p= policy/ });
    t.match(checks['mta-sts'], { status: 'fail', detail: /id=/ });
    t.match(checks['tls-rpt'], { status: 'fail', detail: /rua=.*ftp:/ });

    // The PTR right but the host name resolving elsewhere: not forward-confirmed.
    dns.set(reverseName(IP4), [{ type: 'PTR', data: HOST }]);
    t.match(
      (await e.d.app.doctor.run()).host.find((c) => c.name === 'fcrdns'),
      {
        status: 'fail',
        detail: /resolves to 192\.0\.2\.99, not back to 203\.0\.113\.10/,
        fix: { type: 'A', name: HOST, value: IP4 },
      },
    );

    // A subdomain inherits the parent's DMARC policy (sp=), and passes it only with its DKIM published.
    dns.set('_dmarc.acme.example', [{ type: 'TXT', data: 'v=DMARC1; p=none; sp=quarantine' }]);
    const news = await e.d.request('POST', '/v1/inbound/domains', {
      key: e.ws.live,
      body: { domain: 'news.acme.example' },
    });
    dns.set(news.body.records[1].name, [{ type: 'TXT', data: news.body.records[1].value }]);
    const inherited = await e.d.app.doctor.run({ domain: 'news.acme.example' });
    t.same(
      inherited.domains.map((x) => x.domain),
      ['news.acme.example'],
      '--domain selects one',
    );
    t.match(byName(inherited.domains[0].checks).dmarc, { status: 'pass', detail: /p=quarantine \(inherited from _dmarc\.acme\.example\)/ });
    dns.remove(news.body.records[1].name);
    t.match(byName((await e.d.app.doctor.run({ domain: 'news.acme.example' })).domains[0].checks).dmarc, {
      status: 'fail',
      detail: /DKIM is not published/,
    });

    // Two SPF records, and more than ten lookups through includes.
    dns.set('acme.example', [
      { type: 'TXT', data: 'v=spf1 a -all' },
      { type: 'TXT', data: 'v=spf1 mx -all' },
    ]);
    t.match(byName((await e.d.app.doctor.run()).domains[0].checks).spf, { status: 'fail', detail: /2 SPF records/ });
    dns.set('acme.example', [{ type: 'TXT', data: 'v=spf1 include:a.spf.example include:b.spf.example -all' }]);
    dns.set('a.spf.example', [{ type: 'TXT', data: 'v=spf1 a mx ptr exists:x.example include:c.spf.example -all' }]);
    dns.set('b.spf.example', [{ type: 'TXT', data: 'v=spf1 a:x.example mx:x.example redirect=c.spf.example' }]);
    dns.set('c.spf.example', [{ type: 'TXT', data: `v=spf1 ip4:${IP4} a mx -all` }]);
    const many = byName((await e.d.app.doctor.run()).domains[0].checks).spf;
    t.match(many, { status: 'fail', detail: /needs 14 DNS lookups, more than the 10/ });
    t.notOk(many.fix);
  });

  t.test(`a configured certificate that is self-signed warns too (${db})`, async (t) => {
    const e = await boot(t, { db, selfSigned: true });
    t.match(byName((await e.d.app.doctor.run()).host).certificate, { status: 'warn', detail: /self-signed/ });
  });

  t.test(`doctor.publicIps takes addresses only (${db})`, async (t) => {
    t.same(loadConfig({ env: { POSTERN_DOCTOR_PUBLIC_IPS: '203.0.113.10, 2001:db8::10' } }).doctor.publicIps, [
      '203.0.113.10',
      '2001:db8::10',
    ]);
    t.throws(() => loadConfig({ env: { POSTERN_DOCTOR_PUBLIC_IPS: 'mx.example.com' } }), { message: /doctor\.publicIps.*IPv4 or IPv6/ });
  });

  t.test(`the lookup count follows includes and redirects, and stops at loops (${db})`, async (t) => {
    const e = await boot(t, { db });
    const dns = createResolver([e.dns.address], 500);
    e.dns.set('loop.example', [{ type: 'TXT', data: 'v=spf1 include:loop.example -all' }]);
    e.dns.set('inc.example', [{ type: 'TXT', data: 'v=spf1 a mx -all' }]);
    t.same(await countSpfLookups(dns, 'v=spf1 include:loop.example -all'), { count: 2, notes: ['include:loop.example loops'] });
    t.same(await countSpfLookups(dns, 'v=spf1 ip4:192.0.2.1 redirect=inc.example'), { count: 3, notes: [] });
    t.same(await countSpfLookups(dns, 'v=spf1 include:gone.example ?all'), { count: 1, notes: ['gone.example publishes 0 SPF records'] });
    t.same(await countSpfLookups(dns, 'v=spf1 exists:%{i}.x.example -all'), { count: 1, notes: [] });
    t.same(await countSpfLookups(dns, 'v=spf1 include:%{d}.x.example -all'), {
      count: 1,
      notes: ['include:%{d}.x.example cannot be followed here (macro)'],
    });
  });

  t.test(`no public addresses: the checks that need them warn (${db})`, async (t) => {
    const e = await boot(t, { db, publicIps: '' });
    publishRight(e, e.claim.records.find((r) => r.type === 'TXT')!.value);
    const report = await e.d.app.doctor.run();
    t.match(byName(report.host)['public-addresses'], { status: 'warn', detail: /doctor\.publicIps is empty/ });
    t.notOk(byName(report.host).fcrdns);
    t.match(byName(report.domains[0].checks).spf, { status: 'warn', detail: /publicIps is empty/ });
    // Nothing authorised to propose: the fix names the host (docs/dns.md's record).
    e.dns.remove(BOUNCE);
    t.match(byName((await e.d.app.doctor.run()).host)['bounce-spf'].fix, { value: `v=spf1 a:${HOST} -all` });
    await t.rejects(e.d.app.doctor.run({ domain: 'unknown.example' }), { code: 'not_found' });
  });

  t.test(`GET /v1/inbound/domains/{id}/checks (${db})`, async (t) => {
    const e = await boot(t, { db, certNames: [HOST] });
    const { d } = e;
    publishRight(e, e.claim.records.find((r) => r.type === 'TXT')!.value);
    const res = await d.request<DomainChecks & { host: Check[] }>('GET', `/v1/inbound/domains/${e.claim.id}/checks`, { key: e.ws.live });
    t.equal(res.status, 200, JSON.stringify(res.body));
    t.match(res.body, { id: e.claim.id, domain: 'acme.example', workspace: 'acme', status: 'pass' });
    t.same(
      res.body.checks.map((c) => c.name),
      ['mx', 'spf', 'dkim', 'dmarc', 'mta-sts', 'tls-rpt', 'return-path-mx', 'return-path-spf'],
    );
    t.same(
      res.body.host.map((c) => c.name),
      ['public-addresses', 'fcrdns', 'fcrdns', 'certificate', 'bounce-mx', 'bounce-spf'],
    );

    // A host check failing makes the whole answer fail.
    e.dns.remove(BOUNCE);
    const failing = await d.request('GET', `/v1/inbound/domains/${e.claim.id}/checks`, { key: e.ws.live });
    t.match(failing.body, { status: 'fail' });

    const missing = await d.request('GET', '/v1/inbound/domains/00000000-0000-7000-8000-000000000000/checks', { key: e.ws.live });
    t.equal(missing.status, 404);
    t.match(missing.body, { error: { code: 'not_found' } });
    const other = await d.workspace('other');
    t.equal((await d.request('GET', `/v1/inbound/domains/${e.claim.id}/checks`, { key: other.live })).status, 404, "another workspace's");

    // The domain's scope: inbound. A read key may not.
    const read = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read');
    const refused = await d.request('GET', `/v1/inbound/domains/${e.claim.id}/checks`, { key: read.json.secret });
    t.equal(refused.status, 403);
    t.match(refused.body, { error: { code: 'insufficient_scope', scope: 'inbound' } });
    const inbound = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'inbound');
    t.equal((await d.request('GET', `/v1/inbound/domains/${e.claim.id}/checks`, { key: inbound.json.secret })).status, 200);

    // The shared domain: its MX (the wildcard) and the host.
    await d.request('POST', '/v1/inbound/addresses', { key: e.ws.live, body: { localPart: 'help' } });
    const list = await d.request('GET', '/v1/inbound/domains', { key: e.ws.live });
    const shared = list.body.domains.find((x: { kind: string }) => x.kind === 'shared');
    t.ok(shared, 'the shared domain exists');
    e.dns.set(shared.domain, [{ type: 'MX', data: { preference: 10, exchange: HOST } }]);
    const sharedChecks = await d.request('GET', `/v1/inbound/domains/${shared.id}/checks`, { key: e.ws.live });
    t.same(statuses(sharedChecks.body.checks), { mx: 'pass' });
  });

  t.test(`reverse DNS is asked of dns.servers, never answered by /etc/hosts (${db})`, async (t) => {
    // /etc/hosts names 127.0.0.1 (localhost, the machine's own names); the configured resolver's
    // zone says mx.postern.test, which is what a receiver asking DNS sees.
    const e = await boot(t, { db, publicIps: '127.0.0.1' });
    e.dns.set(reverseName('127.0.0.1'), [{ type: 'PTR', data: HOST }]);
    e.dns.set(HOST, [{ type: 'A', data: '127.0.0.1' }]);
    const fcrdns = (await e.d.app.doctor.run()).host.find((c) => c.name === 'fcrdns');
    t.match(fcrdns, { status: 'pass', detail: `127.0.0.1 → ${HOST} → 127.0.0.1` });
    t.same(await e.d.app.dns.reverse('127.0.0.1'), [HOST], "the daemon's resolver answers from DNS alone");
  });
}
