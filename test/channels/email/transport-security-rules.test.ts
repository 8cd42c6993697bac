// The TLS rules of transport-security.ts one by one, with the DNS answers and MTA-STS lookups given
// by the test: which policy decides each host (DANE over MTA-STS over delivery.tls), what each
// DNS answer means (authenticated or not, NXDOMAIN, empty, SERVFAIL, usable and unusable TLSA
// records), the minute answers are remembered and a failed lookup that is not, and the words of
// the timeline. test/channels/email/transport-security.test.ts holds the same rules end to end
// against a real DNS server and MXes.
import t from 'tap';
import {
  createTransportSecurity,
  describeTls,
  stsTestingFailure,
  type TransportSecurityDeps,
} from '../../../src/channels/email/transport-security.js';
import type { StsLookup, StsPolicy } from '../../../src/channels/email/mta-sts.js';
import type { TlsOutcome } from '../../../src/channels/email/smtp-pool.js';
import type { TlsaRecord, WireAnswer, WireRcode } from '../../../src/lib/dns-wire.js';

const tlsa = (usage: number, selector = 1, matchingType = 1): TlsaRecord => ({ usage, selector, matchingType, data: Buffer.from([usage]) });
const answer = <T>(rcode: WireRcode, authenticated: boolean, records: T[] = []): WireAnswer<T> => ({ rcode, authenticated, records });
const policy = (mode: StsPolicy['mode'], mx: string[] = ['mx.example.net']): StsPolicy => ({
  domain: 'example.net',
  id: '1',
  mode,
  mx,
  maxAge: 86400,
});

/** A transport security over answers the test sets, counting what it was asked. */
function world() {
  const mx = new Map<string, WireAnswer<{ exchange: string; priority: number }> | Error>();
  const tlsaAnswers = new Map<string, WireAnswer<TlsaRecord> | Error>();
  const sts = new Map<string, StsLookup>();
  const asked = { mx: 0, tlsa: 0, sts: 0 };
  let now = 0;
  const deps: Required<TransportSecurityDeps> = {
    wire: {
      async mx(name) {
        asked.mx++;
        const a = mx.get(name) ?? answer('NXDOMAIN', false);
        if (a instanceof Error) throw a;
        return a;
      },
      async tlsa(name) {
        asked.tlsa++;
        const a = tlsaAnswers.get(name) ?? answer('NXDOMAIN', true);
        if (a instanceof Error) throw a;
        return a;
      },
    },
    mtaSts: {
      async lookup(domain) {
        asked.sts++;
        return sts.get(domain) ?? { policy: null };
      },
    },
    now: () => now,
  };
  return { mx, tlsa: tlsaAnswers, sts, asked, deps, advance: (ms: number) => (now += ms) };
}

t.test('a domain: DANE when its MX answer is authenticated, its MTA-STS policy unless it is none, notes kept', async (t) => {
  const w = world();
  const ts = createTransportSecurity(w.deps);
  w.mx.set('signed.example', answer('NOERROR', true, [{ exchange: 'mx.signed.example', priority: 10 }]));
  w.mx.set('unsigned.example', answer('NOERROR', false, [{ exchange: 'mx.unsigned.example', priority: 10 }]));
  w.mx.set('gone.example', answer('NXDOMAIN', true));
  w.sts.set('signed.example', { policy: policy('enforce'), problem: 'fetched late' });
  w.sts.set('none.example', { policy: policy('none') });
  w.sts.set('testing.example', { policy: policy('testing') });

  t.same(await ts.forDomain('signed.example'), { sts: policy('enforce'), dane: true, notes: ['fetched late'] });
  t.same(await ts.forDomain('unsigned.example'), { sts: null, dane: false, notes: [] }, 'an answer nobody vouched for: no DANE');
  t.same(await ts.forDomain('gone.example'), { sts: null, dane: false, notes: [] }, 'an authenticated NXDOMAIN is no DANE either');
  t.same(await ts.forDomain('none.example'), { sts: null, dane: false, notes: [] }, 'a policy of mode none is no policy');
  t.same(await ts.forDomain('testing.example'), { sts: policy('testing'), dane: false, notes: [] });

  w.mx.set('broken.example', new Error('SERVFAIL'));
  t.same(await ts.forDomain('broken.example'), {
    sts: null,
    dane: false,
    notes: [],
    defer: 'DANE: the DNSSEC lookup of broken.example MX failed (SERVFAIL)',
  });

  const plain = createTransportSecurity({ now: () => 0 });
  t.same(await plain.forDomain('signed.example'), { sts: null, dane: false, notes: [] }, 'neither DANE nor MTA-STS configured');
});

t.test('a host: DANE records decide, then MTA-STS, then delivery.tls', async (t) => {
  const w = world();
  const ts = createTransportSecurity(w.deps);
  const dane = { sts: null, dane: true, notes: [] };
  const at = (host: string) => `_25._tcp.${host}`;

  w.tlsa.set(at('ee.example'), answer('NOERROR', true, [tlsa(3), tlsa(1), tlsa(2, 2, 1), tlsa(2, 1, 3)]));
  t.same(
    await ts.forHost(dane, 'example.org', 'ee.example'),
    {
      demand: { kind: 'dane', tlsa: [tlsa(3)], names: ['ee.example', 'example.org'] },
      policy: 'DANE',
    },
    'only usable records: DANE-TA or DANE-EE, selector 0 or 1, matching type 0 to 2',
  );
  w.tlsa.set(at('ta.example'), answer('NOERROR', true, [tlsa(2, 0, 0), tlsa(2, 1, 2)]));
  t.match(await ts.forHost(dane, 'example.org', 'ta.example'), { demand: { kind: 'dane', tlsa: [tlsa(2, 0, 0), tlsa(2, 1, 2)] } });
  w.tlsa.set(at('pkix.example'), answer('NOERROR', true, [tlsa(0), tlsa(1)]));
  t.same(await ts.forHost(dane, 'example.org', 'pkix.example'), { demand: { kind: 'encrypt' }, policy: 'DANE' }, 'unusable only: encrypt');

  // No records, or records nobody vouched for: as if the domain had no DANE for this host.
  w.tlsa.set(at('empty.example'), answer('NOERROR', true, []));
  w.tlsa.set(at('unsigned.example'), answer('NOERROR', false, [tlsa(3)]));
  for (const host of ['empty.example', 'unsigned.example', 'nx.example']) {
    t.same(await ts.forHost(dane, 'example.org', host), { demand: { kind: 'floor' }, policy: null }, host);
  }
  t.same(
    await ts.forHost({ ...dane, sts: policy('enforce', ['nx.example']) }, 'example.net', 'nx.example'),
    { demand: { kind: 'pkix' }, policy: 'MTA-STS' },
    'no TLSA records: MTA-STS decides that host',
  );
  // A lookup that fails may be an attacker hiding the records: that host is skipped.
  w.tlsa.set(at('servfail.example'), answer('SERVFAIL', false));
  t.same(await ts.forHost(dane, 'example.org', 'servfail.example'), {
    skip: 'servfail.example: DANE: the TLSA lookup of _25._tcp.servfail.example failed (SERVFAIL)',
  });
  w.tlsa.set(at('refused.example'), new Error('timed out'));
  t.same(await ts.forHost(dane, 'example.org', 'refused.example'), {
    skip: 'refused.example: DANE: the TLSA lookup of _25._tcp.refused.example failed (timed out)',
  });
  const asked = w.asked.tlsa;
  t.match(await ts.forHost({ ...dane, dane: false }, 'example.org', 'refused.example'), { demand: { kind: 'floor' } });
  t.equal(w.asked.tlsa, asked, 'a domain without DANE asks for no TLSA record');

  const enforce = { sts: policy('enforce', ['mx.example.net', '*.mx.example.net']), dane: false, notes: [] };
  t.same(await ts.forHost(enforce, 'example.net', 'MX.example.net.'), { demand: { kind: 'pkix' }, policy: 'MTA-STS' });
  t.same(await ts.forHost(enforce, 'example.net', 'a.mx.example.net'), { demand: { kind: 'pkix' }, policy: 'MTA-STS' });
  t.same(await ts.forHost(enforce, 'example.net', 'other.example.net'), {
    skip: 'other.example.net: MTA-STS (enforce): not a host the policy of example.net lists (mx.example.net, *.mx.example.net)',
  });
  const testing = { sts: policy('testing'), dane: false, notes: [] };
  t.same(await ts.forHost(testing, 'example.net', 'other.example.net'), { demand: { kind: 'observe' }, policy: 'MTA-STS' });
  t.same(await ts.forHost({ sts: null, dane: false, notes: [] }, 'example.net', 'x.example.net'), {
    demand: { kind: 'floor' },
    policy: null,
  });
});

t.test('answers are remembered for a minute; a failed lookup is asked again at once', async (t) => {
  const w = world();
  const ts = createTransportSecurity(w.deps);
  w.mx.set('signed.example', answer('NOERROR', true));
  await ts.forDomain('signed.example');
  await ts.forDomain('signed.example');
  t.equal(w.asked.mx, 1, 'one MX question for two deliveries');
  w.advance(59_999);
  await ts.forDomain('signed.example');
  t.equal(w.asked.mx, 1, 'still remembered just under a minute later');
  w.advance(1);
  w.mx.set('signed.example', answer('NOERROR', false));
  t.equal((await ts.forDomain('signed.example')).dane, false, 'a minute later the new answer');
  t.equal(w.asked.mx, 2);

  const dane = { sts: null, dane: true, notes: [] };
  w.tlsa.set('_25._tcp.mx.example', new Error('timed out'));
  t.match(await ts.forHost(dane, 'example', 'mx.example'), { skip: /timed out/ });
  w.tlsa.set('_25._tcp.mx.example', answer('NOERROR', true, [tlsa(3)]));
  t.match(await ts.forHost(dane, 'example', 'mx.example'), { demand: { kind: 'dane' } }, 'the failure was not remembered');
  t.equal(w.asked.tlsa, 2);
  await ts.forHost(dane, 'example', 'mx.example');
  t.equal(w.asked.tlsa, 2, 'the success is');

  // A domain that failed is asked again too.
  w.mx.set('flaky.example', new Error('SERVFAIL'));
  t.ok((await ts.forDomain('flaky.example')).defer);
  w.mx.set('flaky.example', answer('NOERROR', true));
  t.same(await ts.forDomain('flaky.example'), { sts: null, dane: true, notes: [] });
});

t.test('the TLS of a delivery in the words of the timeline', async (t) => {
  const tls = (over: Partial<TlsOutcome> = {}): TlsOutcome => ({
    protocol: 'TLSv1.3',
    cipher: 'TLS_AES_256_GCM_SHA384',
    verified: true,
    ...over,
  });
  const plan = (policy: 'DANE' | 'MTA-STS' | null, kind: 'pkix' | 'observe' | 'floor' | 'encrypt' = 'floor') => ({
    demand: { kind } as { kind: 'floor' },
    policy,
  });
  const head = 'TLS TLSv1.3 TLS_AES_256_GCM_SHA384';
  t.equal(describeTls(null, plan(null)), 'no TLS');
  t.equal(describeTls(tls({ dane: 'DANE-EE 3 1 1' }), plan('DANE')), `${head}, DANE-EE 3 1 1`);
  t.equal(describeTls(tls(), plan('DANE', 'encrypt')), `${head}, DANE, unauthenticated: no usable TLSA record`);
  t.equal(describeTls(tls(), plan('MTA-STS', 'pkix')), `${head}, MTA-STS enforce, certificate verified`);
  t.equal(describeTls(tls(), plan('MTA-STS', 'observe')), `${head}, MTA-STS testing, certificate verified`);
  t.equal(
    describeTls(tls({ verified: false, verifyError: 'SELF_SIGNED_CERT' }), plan('MTA-STS', 'observe')),
    `${head}, MTA-STS testing, certificate not verified: SELF_SIGNED_CERT`,
  );
  t.equal(describeTls(tls(), plan(null)), `${head}, opportunistic, certificate verified`);
  t.equal(describeTls(tls({ verified: false }), plan(null)), `${head}, opportunistic, certificate not verified: unknown`);
});

t.test('what MTA-STS testing would have refused', async (t) => {
  const ok: TlsOutcome = { protocol: 'TLSv1.3', cipher: 'X', verified: true };
  t.equal(stsTestingFailure(null, 'mx.example.net', null), null, 'no policy');
  t.equal(stsTestingFailure(policy('enforce'), 'other.example.net', null), null, 'enforce refuses before delivery, not after');
  t.equal(stsTestingFailure(policy('testing'), 'mx.example.net', ok), null, 'a listed host, verified');
  t.equal(
    stsTestingFailure(policy('testing', ['mx.example.net', 'mx2.example.net']), 'other.example.net', ok),
    'other.example.net is not listed in the policy (mx.example.net, mx2.example.net)',
  );
  t.equal(stsTestingFailure(policy('testing'), 'mx.example.net', null), 'mx.example.net offered no STARTTLS');
  t.equal(
    stsTestingFailure(policy('testing'), 'mx.example.net', { ...ok, verified: false, verifyError: 'CERT_HAS_EXPIRED' }),
    "mx.example.net's certificate did not verify (CERT_HAS_EXPIRED)",
  );
  t.equal(
    stsTestingFailure(policy('testing'), 'mx.example.net', { ...ok, verified: false }),
    "mx.example.net's certificate did not verify (unknown)",
  );
});
