// MTA-STS and DANE in direct delivery (docs/email-delivery.md, "Transport security"), against real
// peers on loopback: the DNS server answers MX, TXT and TLSA and plays a validating resolver (the AD
// bit for signed names); an HTTPS server with a test CA (trusted through delivery.tlsCaFile) serves
// the policies; one SMTP sink presents a certificate per MX name (SNI): from the trusted CA, from a
// CA nobody trusts, or matching a TLSA record; a second sink offers no STARTTLS.
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { bootDaemon, type BootOptions } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { scrape, total } from '../../helpers/metrics.js';
import { policy, startMtaStsServer, type MtaStsServer } from '../../helpers/mta-sts-server.js';
import { makeTestCa } from '../../helpers/self-signed.js';
import { startSink, type Sink } from '../../helpers/smtp-sink.js';

const ca = makeTestCa();
const rogue = makeTestCa('Nobody Trusts This CA');
const daneCa = makeTestCa('A DANE-only CA');
const MIN = 60_000;

const spki = (pem: string) => new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest();
const tlsa = (usage: number, selector: number, matchingType: number, certificate: Buffer) =>
  ({ type: 'TLSA', data: { usage, selector, matchingType, certificate } }) as const;

interface Message {
  status: string;
  error: string | null;
  timeline: { e: string }[];
}

interface World {
  dns: DnsServer;
  https: MtaStsServer;
  tlsSink: Sink;
  plainSink: Sink;
  caFile: string;
  /** Publishes an MX for `domain` naming mx.<domain> on the TLS sink (or the plain one). */
  mx(domain: string, opts?: { plain?: boolean; signed?: boolean }): void;
  certs: Record<string, { key: string; cert: string }>;
}

async function world(t: Test): Promise<World> {
  const certs: Record<string, { key: string; cert: string }> = {};
  // Certificates per MX name (SNI), all known before the sink starts.
  const sni: Record<string, { key: string; cert: string }> = {};
  for (const [name, pair] of Object.entries({
    'mx.sts-good.test': ca.issue(['mx.sts-good.test']),
    'mx.sts-badcert.test': rogue.issue(['mx.sts-badcert.test']),
    'mx.sts-wrongname.test': ca.issue(['mx.elsewhere.test']),
    'mx.sts-nomatch.test': ca.issue(['mx.sts-nomatch.test']),
    'mx.sts-testing.test': rogue.issue(['mx.sts-testing.test']),
    'mx.sts-none.test': rogue.issue(['mx.sts-none.test']),
    'mx.sts-cached.test': ca.issue(['mx.sts-cached.test']),
    'mx.dane-ee.test': rogue.issue(['some.other.name']),
    'mx.dane-mismatch.test': rogue.issue(['mx.dane-mismatch.test']),
    'mx.dane-unsigned.test': rogue.issue(['mx.dane-unsigned.test']),
    'mx.dane-insecure-mx.test': rogue.issue(['mx.dane-insecure-mx.test']),
    'mx.dane-sts.test': rogue.issue(['mx.dane-sts.test']),
  })) {
    certs[name] = pair;
    sni[name] = pair;
  }
  // DANE-TA: the server sends its chain up to a CA no one trusts through PKIX.
  const ta = daneCa.issue(['mx.dane-ta.test']);
  certs['mx.dane-ta.test'] = ta;
  sni['mx.dane-ta.test'] = { key: ta.key, cert: ta.cert + daneCa.cert };
  const taWrongName = daneCa.issue(['mx.somewhere-else.test']);
  sni['mx.dane-ta-name.test'] = { key: taWrongName.key, cert: taWrongName.cert + daneCa.cert };
  const tlsSink = await startSink(t, { tls: ca.issue(['mx.default.test']), sni });
  const plainSink = await startSink(t, { host: '127.0.0.7', port: tlsSink.port });
  const dns = await startDnsServer();
  t.teardown(() => dns.close());
  const https = await startMtaStsServer(t, ca);
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-ca-'));
  const caFile = path.join(dir, 'ca.pem');
  writeFileSync(caFile, ca.cert);
  return {
    dns,
    https,
    tlsSink,
    plainSink,
    caFile,
    certs,
    mx(domain, opts = {}) {
      dns.set(domain, [{ type: 'MX', data: { preference: 10, exchange: `mx.${domain}` } }]);
      dns.set(`mx.${domain}`, [{ type: 'A', data: opts.plain ? '127.0.0.7' : '127.0.0.1' }]);
      if (opts.signed) dns.sign(domain);
    },
  };
}

async function daemon(t: Test, w: World, db: BootOptions['db'], env: Record<string, string> = {}) {
  const d = await bootDaemon(t, {
    db,
    env: {
      POSTERN_DNS_SERVERS: w.dns.address,
      POSTERN_DELIVERY_PORT: String(w.tlsSink.port),
      POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
      POSTERN_DELIVERY_TLS_CA_FILE: w.caFile,
      POSTERN_DELIVERY_MTA_STS_PORT: String(w.https.port),
      // The policy hosts are on loopback; the guard refuses private addresses otherwise.
      POSTERN_DELIVERY_MTA_STS_ALLOW_LIST: '127.0.0.1',
      POSTERN_DNS_DNSSEC: 'true',
      POSTERN_RETRY_SCHEDULE: '1m',
      POSTERN_RETRY_MAX_AGE: '3m',
      ...env,
    },
  });
  const ws = await d.workspace('acme', { plan: 'pro' });
  const dispatcher = d.app.workers.find((x) => x.name === 'dispatcher')!;
  return {
    d,
    /** Sends one message to `to` and runs the dispatcher once; the message after its first attempt. */
    async deliver(to: string): Promise<Message & { id: string }> {
      const sent = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to, channel: 'email', content: { subject: `to ${to}`, text: 'hello' } },
      });
      t.equal(sent.status, 202, JSON.stringify(sent.body));
      await dispatcher.tick();
      return { ...(await d.request('GET', `/v1/messages/${sent.body.id}`, { key: ws.live })).body, id: sent.body.id as string };
    },
    get: async (id: string): Promise<Message> => (await d.request('GET', `/v1/messages/${id}`, { key: ws.live })).body,
    tick: () => dispatcher.tick(),
  };
}

const notes = (m: Message) => m.timeline.map((e) => e.e);
const receivedBy = (sink: Sink, to: string) => sink.received.filter((r) => r.to.includes(to)).length;

for (const db of testDatabases()) {
  t.test(`MTA-STS on ${db}`, async (t) => {
    const w = await world(t);
    const { d, deliver, get, tick } = await daemon(t, w, db);
    const publish = (domain: string, mode: 'enforce' | 'testing' | 'none', mx = [`mx.${domain}`], id = '1') => {
      w.mx(domain);
      w.dns.set(`_mta-sts.${domain}`, [{ type: 'TXT', data: `v=STSv1; id=${id};` }]);
      w.dns.set(`mta-sts.${domain}`, [{ type: 'A', data: '127.0.0.1' }]);
      w.https.serve(domain, { policy: policy(mode, mx) });
    };

    t.test('enforce, a host the policy lists with a certificate valid for its name: delivered over verified TLS', async (t) => {
      publish('sts-good.test', 'enforce', ['*.sts-good.test']);
      const m = await deliver('a@sts-good.test');
      t.equal(m.status, 'delivered', m.error ?? '');
      t.match(
        notes(m).join('\n'),
        /delivered \(mx\.sts-good\.test: 250 .*\(TLS TLSv1\.[23] \S+, MTA-STS enforce, certificate verified\)\)/,
      );
      t.equal(receivedBy(w.tlsSink, 'a@sts-good.test'), 1);
      const row = await d.app.db.selectFrom('mta_sts_policies').selectAll().where('domain', '=', 'sts-good.test').executeTakeFirstOrThrow();
      t.match(row, { policy_id: '1', mode: 'enforce', max_age: 86400 });
      t.same(JSON.parse(row.mx), ['*.sts-good.test'], 'the policy is cached in the database');
    });

    t.test('enforce, a certificate from a CA nobody trusts: deferred, nothing sent, and failed when retries expire', async (t) => {
      publish('sts-badcert.test', 'enforce');
      const m = await deliver('a@sts-badcert.test');
      t.equal(m.status, 'dispatched');
      t.match(m.error, /^MTA-STS \(enforce\) of sts-badcert\.test: mx\.sts-badcert\.test: /);
      t.equal(receivedBy(w.tlsSink, 'a@sts-badcert.test'), 0, 'no mail over an unverified connection');
      const start = d.clock.now().getTime();
      for (const minutes of [1, 2, 3]) {
        d.clock.set(start + minutes * MIN + 1000);
        await tick();
      }
      const failed = await get(m.id);
      t.equal(failed.status, 'failed');
      t.match(failed.error, /^retries expired: MTA-STS \(enforce\) of sts-badcert\.test: /);
      t.equal(receivedBy(w.tlsSink, 'a@sts-badcert.test'), 0);
    });

    t.test('enforce, a certificate for another name: deferred', async (t) => {
      publish('sts-wrongname.test', 'enforce');
      const m = await deliver('a@sts-wrongname.test');
      t.equal(m.status, 'dispatched');
      t.match(
        m.error,
        /MTA-STS \(enforce\) of sts-wrongname\.test: mx\.sts-wrongname\.test: .*(altnames|ERR_TLS_CERT_ALTNAME_INVALID|Hostname)/i,
      );
      t.equal(receivedBy(w.tlsSink, 'a@sts-wrongname.test'), 0);
    });

    t.test('enforce, no MX host matches the policy: deferred without a connection', async (t) => {
      publish('sts-nomatch.test', 'enforce', ['mx.elsewhere.test']);
      const before = w.tlsSink.connections();
      const m = await deliver('a@sts-nomatch.test');
      t.equal(m.status, 'dispatched');
      t.match(m.error, /not a host the policy of sts-nomatch\.test lists \(mx\.elsewhere\.test\)/);
      t.equal(w.tlsSink.connections(), before, 'the unlisted host was never contacted');
    });

    t.test('enforce, a listed host without STARTTLS: deferred', async (t) => {
      publish('sts-notls.test', 'enforce');
      w.mx('sts-notls.test', { plain: true });
      const m = await deliver('a@sts-notls.test');
      t.equal(m.status, 'dispatched');
      t.match(m.error, /MTA-STS \(enforce\) of sts-notls\.test: mx\.sts-notls\.test: /);
      t.equal(receivedBy(w.plainSink, 'a@sts-notls.test'), 0, 'no mail in plain text');
    });

    t.test('testing: delivered anyway, and the failure is on the timeline', async (t) => {
      publish('sts-testing.test', 'testing');
      const m = await deliver('a@sts-testing.test');
      t.equal(m.status, 'delivered');
      t.match(
        notes(m).join('\n'),
        /MTA-STS \(testing\) of sts-testing\.test would refuse this delivery: mx\.sts-testing\.test's certificate did not verify/,
      );
      t.match(notes(m).join('\n'), /MTA-STS testing, certificate not verified/);
      t.equal(receivedBy(w.tlsSink, 'a@sts-testing.test'), 1);
    });

    t.test('none: delivered as without a policy', async (t) => {
      publish('sts-none.test', 'none', []);
      const m = await deliver('a@sts-none.test');
      t.equal(m.status, 'delivered');
      t.match(notes(m).join('\n'), /opportunistic, certificate not verified/);
      t.notMatch(notes(m).join('\n'), /MTA-STS/);
    });

    t.test('the policy is cached for max_age, fetched again only when the TXT id changes, and binds after the TXT is gone', async (t) => {
      publish('sts-cached.test', 'enforce');
      t.equal((await deliver('a@sts-cached.test')).status, 'delivered');
      t.equal(w.https.fetches('sts-cached.test'), 1);
      // A minute later the TXT record is asked again; the same id means no new fetch.
      d.clock.set(d.clock.now().getTime() + MIN + 1000);
      t.equal((await deliver('b@sts-cached.test')).status, 'delivered');
      t.equal(w.https.fetches('sts-cached.test'), 1, 'same id: the cached policy');
      // A new id: fetched again, and the new policy (another MX) is the one enforced.
      w.dns.set('_mta-sts.sts-cached.test', [{ type: 'TXT', data: 'v=STSv1; id=2;' }]);
      w.https.serve('sts-cached.test', { policy: policy('enforce', ['mx.elsewhere.test']) });
      d.clock.set(d.clock.now().getTime() + MIN + 1000);
      const refused = await deliver('c@sts-cached.test');
      t.equal(w.https.fetches('sts-cached.test'), 2, 'new id: fetched again');
      t.match(refused.error, /not a host the policy of sts-cached\.test lists \(mx\.elsewhere\.test\)/);
      // The TXT record disappears (a downgrade attempt): the cached policy still binds.
      w.dns.remove('_mta-sts.sts-cached.test');
      d.clock.set(d.clock.now().getTime() + MIN + 1000);
      t.match((await deliver('d@sts-cached.test')).error, /not a host the policy of sts-cached\.test lists/);
      // A fetch that fails while a policy is cached: the cached one applies, and the failure is noted.
      w.dns.set('_mta-sts.sts-cached.test', [{ type: 'TXT', data: 'v=STSv1; id=3;' }]);
      w.https.serve('sts-cached.test', { status: 500 });
      d.clock.set(d.clock.now().getTime() + MIN + 1000);
      const stale = await deliver('e@sts-cached.test');
      t.match(notes(stale).join('\n'), /MTA-STS policy of sts-cached\.test not fetched \(.*answered 500\); the cached policy applies/);
      t.match(stale.error, /not a host the policy of sts-cached\.test lists/);
      // Once max_age has passed with no way to refresh, the domain has no policy.
      d.clock.set(d.clock.now().getTime() + 86400_000 + 1000);
      t.equal((await deliver('f@sts-cached.test')).status, 'delivered');
    });

    t.test(
      'a policy host that redirects, lies about the media type, sends too much or has a bad certificate: no policy, noted',
      async (t) => {
        const cases: [string, Parameters<MtaStsServer['serve']>[1] | 'badcert', RegExp][] = [
          ['sts-redirect.test', { status: 301, location: 'https://mta-sts.sts-good.test/.well-known/mta-sts.txt' }, /answered 301/],
          [
            'sts-html.test',
            { policy: policy('enforce', ['mx.elsewhere.test']), contentType: 'text/html' },
            /is text\/html, not text\/plain/,
          ],
          ['sts-huge.test', { huge: true }, /larger than 64 KiB/],
          ['sts-broken.test', { policy: 'version: STSv1\r\nmode: enforce\r\nmax_age: 86400\r\n' }, /policy lists no mx/],
          ['sts-badhttps.test', 'badcert', /fetch failed/],
        ];
        for (const [domain, answer, why] of cases) {
          w.mx(domain);
          w.dns.set(`_mta-sts.${domain}`, [{ type: 'TXT', data: 'v=STSv1; id=1;' }]);
          w.dns.set(`mta-sts.${domain}`, [{ type: 'A', data: '127.0.0.1' }]);
          if (answer === 'badcert') {
            w.https.certificate(domain, rogue.issue([`mta-sts.${domain}`]));
            w.https.serve(domain, { policy: policy('enforce', ['mx.elsewhere.test']) });
          } else w.https.serve(domain, answer);
          const m = await deliver(`a@${domain}`);
          t.equal(m.status, 'delivered', `${domain}: delivered as without a policy`);
          t.match(notes(m).join('\n'), why, `${domain}: the reason is on the timeline`);
        }
        t.equal(w.https.fetches('sts-good.test'), 1, 'the redirect was not followed');
      },
    );

    t.test('a policy host on a private address is not fetched, in any IPv6 clothing', async (t) => {
      // The allow list names 127.0.0.1 as written; these are refused as what they carry or are.
      for (const [domain, record] of [
        ['sts-mapped.test', { type: 'AAAA', data: '::ffff:127.0.0.1' }],
        ['sts-compat.test', { type: 'AAAA', data: '::127.0.0.1' }],
        ['sts-6to4.test', { type: 'AAAA', data: '2002:7f00:1::1' }],
        ['sts-private.test', { type: 'A', data: '10.0.0.1' }],
      ] as const) {
        w.mx(domain);
        w.dns.set(`_mta-sts.${domain}`, [{ type: 'TXT', data: 'v=STSv1; id=1;' }]);
        w.dns.set(`mta-sts.${domain}`, [record]);
        w.https.serve(domain, { policy: policy('enforce', ['mx.elsewhere.test']) });
        const m = await deliver(`a@${domain}`);
        t.equal(m.status, 'delivered', `${domain}: delivered as without a policy`);
        t.match(
          notes(m).join('\n'),
          `MTA-STS policy of ${domain} not fetched (refused to connect to mta-sts.${domain}: private or loopback address (set delivery.mtaSts.allowPrivate or delivery.mtaSts.allowList))`,
          `${domain}: the refusal is on the timeline`,
        );
        t.equal(w.https.fetches(domain), 0, `${domain}: never fetched`);
      }
    });
  });

  t.test(`DANE on ${db}`, async (t) => {
    const w = await world(t);
    const { d, deliver } = await daemon(t, w, db);
    const dane = (
      domain: string,
      records: ReturnType<typeof tlsa>[],
      opts: { signMx?: boolean; signTlsa?: boolean; plain?: boolean } = {},
    ) => {
      w.mx(domain, { plain: opts.plain, signed: opts.signMx ?? true });
      w.dns.set(`_25._tcp.mx.${domain}`, records);
      if (opts.signTlsa ?? true) w.dns.sign(`_25._tcp.mx.${domain}`);
    };
    const eeOf = (name: string) => tlsa(3, 1, 1, sha256(spki(w.certs[name].cert)));

    t.test('DANE-EE 3 1 1 matching the key: delivered, though no CA vouches for it nor does it name the host', async (t) => {
      dane('dane-ee.test', [eeOf('mx.dane-ee.test')]);
      const m = await deliver('a@dane-ee.test');
      t.equal(m.status, 'delivered', m.error ?? '');
      t.match(notes(m).join('\n'), /\(TLS TLSv1\.[23] \S+, DANE-EE 3 1 1\)/);
    });

    t.test('DANE-TA 2 0 1 naming the chain’s CA: delivered; the leaf must name the host', async (t) => {
      dane('dane-ta.test', [tlsa(2, 0, 1, sha256(new X509Certificate(daneCa.cert).raw))]);
      const m = await deliver('a@dane-ta.test');
      t.equal(m.status, 'delivered', m.error ?? '');
      t.match(notes(m).join('\n'), /DANE-TA 2 0 1/);
      dane('dane-ta-name.test', [tlsa(2, 0, 1, sha256(new X509Certificate(daneCa.cert).raw))]);
      const wrong = await deliver('a@dane-ta-name.test');
      t.equal(wrong.status, 'dispatched');
      t.match(wrong.error, /DANE: the certificate names neither mx\.dane-ta-name\.test nor dane-ta-name\.test/);
    });

    t.test('a TLSA record present but unmatched: deferred, nothing sent', async (t) => {
      dane('dane-mismatch.test', [eeOf('mx.dane-ee.test'), tlsa(2, 1, 1, sha256(spki(daneCa.cert)))]);
      const m = await deliver('a@dane-mismatch.test');
      t.equal(m.status, 'dispatched');
      t.match(m.error, /DANE: no TLSA record matches the certificate \(3 1 1, 2 1 1\)/);
      t.equal(receivedBy(w.tlsSink, 'a@dane-mismatch.test'), 0);
    });

    t.test('TLSA records the resolver did not validate, or behind an unsigned MX, are not used', async (t) => {
      dane('dane-unsigned.test', [eeOf('mx.dane-ee.test')], { signTlsa: false });
      t.equal((await deliver('a@dane-unsigned.test')).status, 'delivered', 'unsigned TLSA: opportunistic');
      dane('dane-insecure-mx.test', [eeOf('mx.dane-ee.test')], { signMx: false });
      t.equal((await deliver('a@dane-insecure-mx.test')).status, 'delivered', 'unsigned MX: opportunistic');
    });

    t.test('only unusable (PKIX) TLSA records: TLS is still required', async (t) => {
      dane('dane-unusable.test', [tlsa(1, 1, 1, sha256(spki(ca.cert)))], { plain: true });
      const m = await deliver('a@dane-unusable.test');
      t.equal(m.status, 'dispatched');
      t.match(m.error, /DANE of mx\.dane-unusable\.test: /);
      t.equal(receivedBy(w.plainSink, 'a@dane-unusable.test'), 0, 'no mail in plain text');
    });

    t.test('a TLSA lookup that fails: that host is skipped and the message deferred', async (t) => {
      w.mx('dane-servfail.test', { signed: true });
      w.dns.breaks('_25._tcp.mx.dane-servfail.test');
      const m = await deliver('a@dane-servfail.test');
      t.equal(m.status, 'dispatched');
      t.match(m.error, /DANE: the TLSA lookup of _25\._tcp\.mx\.dane-servfail\.test failed \(SERVFAIL\)/);
    });

    t.test('DANE takes precedence over MTA-STS for a host that has it', async (t) => {
      dane('dane-sts.test', [eeOf('mx.dane-sts.test')]);
      w.dns.set('_mta-sts.dane-sts.test', [{ type: 'TXT', data: 'v=STSv1; id=1;' }]);
      w.dns.set('mta-sts.dane-sts.test', [{ type: 'A', data: '127.0.0.1' }]);
      w.https.serve('dane-sts.test', { policy: policy('enforce', ['mx.dane-sts.test']) });
      const m = await deliver('a@dane-sts.test');
      t.equal(m.status, 'delivered', 'a certificate MTA-STS would refuse, authenticated by DANE');
      t.match(notes(m).join('\n'), /DANE-EE 3 1 1/);
    });

    t.test('the policy of each TLS session is counted', async (t) => {
      const { samples } = await scrape(d.metricsPort!);
      // dane-ee, dane-ta, dane-sts; dane-unsigned and dane-insecure-mx went opportunistic.
      t.equal(total(samples, 'postern_email_tls_total', { result: 'tls', policy: 'dane' }), 3);
      t.equal(total(samples, 'postern_email_tls_total', { result: 'tls', policy: 'opportunistic' }), 2);
    });
  });

  t.test(`without dns.dnssec the AD bit is not believed on ${db}`, async (t) => {
    const w = await world(t);
    const { deliver } = await daemon(t, w, db, { POSTERN_DNS_DNSSEC: 'false' });
    w.mx('dane-mismatch.test', { signed: true });
    w.dns.set('_25._tcp.mx.dane-mismatch.test', [tlsa(3, 1, 1, Buffer.alloc(32, 7))]);
    w.dns.sign('_25._tcp.mx.dane-mismatch.test');
    const m = await deliver('a@dane-mismatch.test');
    t.equal(m.status, 'delivered');
    t.notOk(
      w.dns.queries.some((q) => q.startsWith('TLSA ')),
      'no TLSA question asked',
    );
  });
}
