// The SSRF guard's decisions (lib/ssrf.ts) one by one, with names resolved by a real DNS server on
// loopback: the private ranges at their edges, the allow list (names, addresses, CIDR ranges), the
// URL checks, and the connect-time lookup. Its use by webhooks and channels is tested there
// (test/webhooks/ssrf.test.ts, test/e2e/channel-ssrf.test.ts).
import t from 'tap';
import { createResolver } from '../../src/lib/dns.js';
import {
  addressAllowed,
  BlockedDestinationError,
  guardedLookup,
  isBlockedDestination,
  isPrivateAddress,
  literalAddressProblem,
  refusedReason,
  urlProblem,
  type SsrfPolicy,
} from '../../src/lib/ssrf.js';
import { webhookSsrfPolicy } from '../../src/webhooks/ssrf.js';
import { startDnsServer } from '../helpers/dns-server.js';

const policy = (over: Partial<SsrfPolicy> = {}): SsrfPolicy => ({
  allowPrivate: false,
  allowList: [],
  settings: 'x.allowPrivate',
  ...over,
});

t.test('every private range, at both edges', async (t) => {
  const cases: [string, boolean][] = [
    ['0.255.255.255', true],
    ['1.0.0.0', false],
    ['9.255.255.255', false],
    ['10.255.255.255', true],
    ['11.0.0.0', false],
    ['100.63.255.255', false],
    ['100.64.0.0', true],
    ['100.127.255.255', true],
    ['100.128.0.0', false],
    ['126.255.255.255', false],
    ['128.0.0.0', false],
    ['169.253.255.255', false],
    ['169.254.0.0', true],
    ['169.255.0.0', false],
    ['172.15.255.255', false],
    ['172.31.255.255', true],
    ['192.0.0.1', true],
    ['192.0.1.0', false],
    ['192.0.2.1', true],
    ['192.0.3.0', false],
    ['192.167.255.255', false],
    ['192.168.255.255', true],
    ['192.169.0.0', false],
    ['198.17.255.255', false],
    ['198.18.0.0', true],
    ['198.19.255.255', true],
    ['198.20.0.0', false],
    ['198.51.100.1', true],
    ['198.51.101.0', false],
    ['203.0.113.1', true],
    ['203.0.114.0', false],
    ['223.255.255.255', false],
    ['239.255.255.255', true],
    ['240.0.0.1', true],
    ['255.255.255.255', true],
    ['::2', true], // IPv4-compatible (::/96), refused whole
    ['::1:0:0:0', false],
    ['fbff::1', false],
    ['fc00::1', true],
    ['fdff:ffff::1', true],
    ['fe7f::1', false],
    ['febf::1', true],
    ['fec0::1', false],
    ['ff02::1', true],
    ['100::1', true],
    ['100:0:0:1::1', false],
    ['2001:db8:ffff::1', true],
    ['2001:db9::1', false],
    ['64:ff9b::a00:1', true],
    ['64:ff9b::808:808', false],
    ['64:ff9b:0:0:1::1', false],
    ['::FFFF:10.0.0.1', true],
    ['::ffff:1.1.1.1', false],
    ['1.1.1.1', false],
    ['', true],
  ];
  for (const [ip, expected] of cases) t.equal(isPrivateAddress(ip), expected, ip || '(empty)');
});

// IPv4 carried inside IPv6 (docs/api/webhooks.md, "Private destinations"): the forms that reach
// their IPv4 address are judged by it, in every spelling; the transition forms no destination
// needs are refused whole, whatever they carry.
t.test('IPv4 inside IPv6, in every spelling', async (t) => {
  const cases: [string, boolean, string][] = [
    // IPv4-mapped (::ffff:0:0/96): judged as the IPv4 address.
    ['::ffff:127.0.0.1', true, 'mapped, dotted'],
    ['::ffff:7f00:1', true, 'mapped, hex'],
    ['::FFFF:7F00:0001', true, 'mapped, capitals and leading zeros'],
    ['0:0:0:0:0:ffff:7f00:0001', true, 'mapped, written out'],
    ['0:0:0:0:0:ffff:127.0.0.1', true, 'mapped, written out, dotted'],
    ['0::ffff:10.0.0.1', true, 'mapped, a zero before ::'],
    ['::0:ffff:10.0.0.1', true, 'mapped, a zero after ::'],
    ['::ffff:a9fe:a9fe', true, 'mapped metadata address'],
    ['::ffff:100.64.0.1', true, 'mapped CGNAT'],
    ['::ffff:808:808', false, 'mapped public address'],
    ['::ffff:8.8.8.8', false, 'mapped public address, dotted'],
    ['::ffff:127.0.0.1%eth0', true, 'mapped, with a zone'],
    // ffff where the mapped form has it, but another word is not zero: not mapped, a plain address.
    ['2606:4700::ffff:7f00:1', false, 'a public address ending like a mapped one'],
    ['0:1::ffff:7f00:1', false, 'not mapped: word 1'],
    ['0:0:1::ffff:7f00:1', false, 'not mapped: word 2'],
    ['0:0:0:1:0:ffff:7f00:1', false, 'not mapped: word 3'],
    ['0:0:0:0:1:ffff:7f00:1', false, 'not mapped: word 4'],
    // NAT64's well-known prefix (64:ff9b::/96): a translator dials the IPv4 address.
    ['64:ff9b::127.0.0.1', true, 'NAT64 loopback, dotted'],
    ['64:ff9b::7f00:1', true, 'NAT64 loopback'],
    ['64:ff9b:0:0:0:0:a9fe:a9fe', true, 'NAT64 metadata address, written out'],
    ['64:ff9b::a00:1', true, 'NAT64 private'],
    ['64:ff9b::808:808', false, 'NAT64 public address (an IPv6-only host behind DNS64)'],
    ['64:ff9b::93.184.216.34', false, 'NAT64 public address, dotted'],
    ['64:ff9b::93.184.216.34%eth0', false, 'NAT64 public address, dotted, with a zone'],
    ['64:ff9b::10.10.10.10', true, 'NAT64 private, dotted'],
    ['64:1::7f00:1', false, 'not NAT64: word 1'],
    ['65:ff9b::7f00:1', false, 'not NAT64: word 0'],
    ['64:ff9b:0:1::7f00:1', false, 'not NAT64: word 3'],
    ['64:ff9b::1:7f00:1', false, 'not NAT64: word 5'],
    ['64:ff9b::0.0.0.0', true, 'NAT64 this-network'],
    ['64:ff9b:0:0:1::1', false, 'outside the /96'],
    // NAT64 local-use (64:ff9b:1::/48): the IPv4 sits where the operator's prefix length puts it.
    ['64:ff9b:1::7f00:1', true, 'NAT64 local-use'],
    ['64:ff9b:1::808:808', true, 'NAT64 local-use, public-looking tail'],
    ['64:ff9b:1:ffff:ffff:ffff:ffff:ffff', true, 'top of NAT64 local-use'],
    ['64:ff9b:2::1', false, 'past NAT64 local-use'],
    // IPv4-compatible (::/96, deprecated) and IPv4-translated (::ffff:0:0:0/96, SIIT).
    ['::127.0.0.1', true, 'IPv4-compatible loopback'],
    ['::7f00:1', true, 'IPv4-compatible loopback, hex'],
    ['::8.8.8.8', true, 'IPv4-compatible public: no destination uses the form'],
    ['::ffff:0:127.0.0.1', true, 'IPv4-translated loopback'],
    ['::ffff:0:7f00:1', true, 'IPv4-translated loopback, hex'],
    ['::ffff:0:8.8.8.8', true, 'IPv4-translated public'],
    ['::1:0:0:1', false, 'outside ::/96'],
    // 6to4 (2002::/16, IPv4 in bits 16–48) and Teredo (2001::/32, client IPv4 inverted in the last 32 bits).
    ['2002:7f00:1::1', true, '6to4 of loopback'],
    ['2002:a9fe:a9fe::', true, '6to4 of the metadata address'],
    ['2002:808:808::1', true, '6to4 of a public address: the form is refused whole'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', true, 'Teredo, client 127.0.0.1'],
    ['2001::f7f7:f7f7', true, 'Teredo, client 8.8.8.8: refused whole'],
    ['2001:1::1', false, 'past Teredo'],
    ['2003::1', false, 'past 6to4'],
    ['2001:4860:4860::8888', false, 'a public IPv6 address'],
    // A scope id does not hide the address.
    ['fe80::1%eth0', true, 'link-local with a zone'],
  ];
  for (const [ip, expected, what] of cases) t.equal(isPrivateAddress(ip), expected, `${ip}: ${what}`);
  // A URL's host is what the WHATWG parser makes of it: `[::127.0.0.1]` becomes `[::7f00:1]`.
  for (const url of ['http://[::127.0.0.1]/', 'http://[::ffff:0:127.0.0.1]/', 'http://[2002:7f00:1::]/', 'http://[64:ff9b::127.0.0.1]/']) {
    t.ok(literalAddressProblem(policy(), new URL(url)) instanceof BlockedDestinationError, url);
  }
  t.equal(literalAddressProblem(policy(), new URL('http://[64:ff9b::8.8.8.8]/')), null, 'NAT64 of a public address is a destination');
});

t.test('AAAA answers with IPv4 inside are judged like literals, at the URL check and at connect time', async (t) => {
  const dns = await startDnsServer({
    'compat.test': [{ type: 'AAAA', data: '::127.0.0.1' }],
    'translated.test': [{ type: 'AAAA', data: '::ffff:0:a9fe:a9fe' }],
    'sixtofour.test': [{ type: 'AAAA', data: '2002:a00:1::1' }],
    'teredo.test': [{ type: 'AAAA', data: '2001:0:4136:e378:8000:63bf:80ff:fffe' }],
    'nat64.test': [{ type: 'AAAA', data: '64:ff9b::c0a8:101' }],
    'nat64-public.test': [{ type: 'AAAA', data: '64:ff9b::5db8:d822' }],
  });
  t.teardown(() => dns.close());
  const resolver = createResolver([dns.address], 2000);
  const p = policy();
  for (const host of ['compat.test', 'translated.test', 'sixtofour.test', 'teredo.test', 'nat64.test']) {
    t.match(await urlProblem(p, resolver, new URL(`https://${host}/hook`)), /private or loopback address/, host);
    const refused = await new Promise<NodeJS.ErrnoException | null>((resolve) =>
      guardedLookup(p, resolver)(host, {}, (err) => resolve(err)),
    );
    t.ok(refused instanceof BlockedDestinationError, `${host}: refused at connect time`);
  }
  t.equal(await urlProblem(p, resolver, new URL('https://nat64-public.test/hook')), null, 'NAT64 of a public address');
});

t.test('the allow list: names, addresses and CIDR ranges', async (t) => {
  const p = policy({ allowList: ['Hooks.Internal.Test', '10.0.0.7', '192.168.8.0/22', 'fd00:1::/32'] });
  t.ok(addressAllowed(p, 'hooks.internal.test', '10.9.9.9'), 'a listed name, any address');
  t.ok(addressAllowed(p, 'HOOKS.internal.TEST', '10.9.9.9'), 'names compare without case');
  t.notOk(addressAllowed(p, 'other.internal.test', '10.9.9.9'), 'an unlisted name');
  t.ok(addressAllowed(p, 'any.test', '10.0.0.7'), 'a listed address, any name');
  t.notOk(addressAllowed(p, 'any.test', '10.0.0.8'), 'the next address is not listed');
  t.ok(addressAllowed(p, '192.168.11.255', '192.168.11.255'), 'the top of a CIDR range');
  t.ok(addressAllowed(p, 'x.test', '192.168.8.0'), 'the bottom of a CIDR range');
  t.notOk(addressAllowed(p, 'x.test', '192.168.12.0'), 'just past a CIDR range');
  t.notOk(addressAllowed(p, 'x.test', '192.168.7.255'), 'just below a CIDR range');
  t.ok(addressAllowed(p, 'x.test', 'fd00:1:ffff::9'), 'an IPv6 range');
  t.notOk(addressAllowed(p, 'x.test', 'fd00:2::9'), 'outside the IPv6 range');
  t.notOk(addressAllowed(policy({ allowList: ['fd00::/8'] }), 'x.test', '10.0.0.1'), 'an IPv6 range says nothing of IPv4');
  t.notOk(addressAllowed(policy({ allowList: ['10.0.0.0/8'] }), '10.0.0.1', undefined as unknown as string), 'no address, no range');
  t.ok(addressAllowed(policy({ allowList: ['::1'] }), '[::1]', '127.0.0.9'), 'brackets are not part of the name');
  t.notOk(addressAllowed(policy({ allowList: ['not-a-net/8'] }), 'x.test', '10.0.0.1'), 'a range that is no address');
  t.notOk(addressAllowed(policy({ allowList: ['10.0.0.0/8x'] }), 'x.test', '10.0.0.1'), 'a range with trailing text is no range');
  t.notOk(addressAllowed(policy({ allowList: ['10.0.0.0/8'] }), 'x.test', '::1'), 'an IPv4 range says nothing of IPv6');
  t.ok(addressAllowed(policy(), 'x.test', '8.8.8.8'), 'public addresses need no listing');
  t.notOk(addressAllowed(policy(), 'x.test', '127.0.0.1'), 'loopback is refused by default');
  t.ok(addressAllowed(policy({ allowPrivate: true }), 'x.test', '127.0.0.1'), 'allowPrivate lifts the rule');
});

t.test('URL checks and the connect-time lookup, through a real resolver', async (t) => {
  const dns = await startDnsServer({
    'public.test': [
      { type: 'A', data: '93.184.216.34' },
      { type: 'AAAA', data: '2606:2800:220:1::1' },
    ],
    'mixed.test': [
      { type: 'A', data: '93.184.216.34' },
      { type: 'A', data: '10.0.0.5' },
    ],
    'v6only.test': [{ type: 'AAAA', data: 'fd00::5' }],
  });
  t.teardown(() => dns.close());
  const resolver = createResolver([dns.address], 2000);
  const p = policy({ settings: 'test.allowPrivate or test.allowList' });

  t.equal(await urlProblem(p, resolver, new URL('https://public.test/x')), null);
  t.equal(await urlProblem(p, resolver, new URL('http://nowhere.test/x')), null, 'a name that does not resolve (yet) is accepted');
  t.equal(await urlProblem(p, resolver, new URL('ftp://public.test/x')), 'url must be http or https');
  t.equal(await urlProblem(p, resolver, new URL('https://u@public.test/x')), 'url must not carry credentials');
  t.equal(await urlProblem(p, resolver, new URL('https://:pw@public.test/x')), 'url must not carry credentials');
  t.equal(
    await urlProblem(p, resolver, new URL('https://mixed.test/x')),
    'url resolves to a private or loopback address (10.0.0.5); the operator must allow it with test.allowPrivate or test.allowList',
    'one private address is enough to refuse',
  );
  t.match(await urlProblem(p, resolver, new URL('https://v6only.test/x')), /\(fd00::5\)/, 'AAAA answers count');
  t.match(await urlProblem(p, resolver, new URL('http://app.localhost/x')), /\(127\.0\.0\.1\)/, '*.localhost is loopback, without DNS');
  t.match(await urlProblem(p, resolver, new URL('http://LOCALHOST/x')), /\(127\.0\.0\.1\)/, 'localhost in any case');
  t.match(await urlProblem(p, resolver, new URL('http://[::1]:8080/x')), /\(::1\)/, 'a bracketed address');
  t.equal(await urlProblem(policy({ allowList: ['mixed.test'] }), resolver, new URL('https://mixed.test/x')), null, 'a listed name');
  t.notOk(
    dns.queries.some((q) => q.includes('localhost')),
    'localhost names never reach DNS',
  );

  t.equal(literalAddressProblem(p, new URL('https://public.test/')), null, 'a name is left to lookup');
  t.equal(literalAddressProblem(p, new URL('https://8.8.8.8/')), null);
  const literal = literalAddressProblem(p, new URL('http://[fe80::1]/'));
  t.ok(literal instanceof BlockedDestinationError);
  t.equal(literal?.message, 'refused to connect to fe80::1: private or loopback address (set test.allowPrivate or test.allowList)');
  t.equal(literalAddressProblem(policy({ allowList: ['fe80::/10'] }), new URL('http://[fe80::1]/')), null);

  const lookup = (pol: SsrfPolicy, host: string, options: { family?: number; all?: boolean } = {}) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
      guardedLookup(pol, resolver)(host, options, (err, address, family) => resolve({ err, address, family })),
    );
  t.same(await lookup(p, 'public.test', { family: 4 }), { err: null, address: '93.184.216.34', family: 4 });
  t.same(await lookup(p, 'public.test', { family: 6 }), { err: null, address: '2606:2800:220:1::1', family: 6 });
  t.same(
    await lookup(p, 'public.test', { all: true }),
    {
      err: null,
      address: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ],
      family: undefined,
    },
    'all: every allowed address',
  );
  t.same(await lookup(p, 'mixed.test', { all: true }), {
    err: null,
    address: [{ address: '93.184.216.34', family: 4 }],
    family: undefined,
  });
  const blocked = await lookup(p, 'v6only.test');
  t.ok(blocked.err instanceof BlockedDestinationError, 'only private addresses: refused');
  t.ok(isBlockedDestination(blocked.err));
  t.equal(blocked.err?.code, 'EBLOCKEDDEST');
  const family = await lookup(p, 'v6only.test', { family: 4 });
  t.ok(family.err instanceof BlockedDestinationError, 'nothing allowed in the asked family: refused');
  const missing = await lookup(p, 'nowhere.test');
  t.equal(missing.err?.code, 'ENOTFOUND');
  t.equal(missing.err?.message, 'cannot resolve nowhere.test');
  t.same(await lookup(policy({ allowPrivate: true }), 'localhost', { family: 4 }), { err: null, address: '127.0.0.1', family: 4 });
  t.same(await lookup(policy({ allowPrivate: true }), '[::1]'), { err: null, address: '::1', family: 6 });
  t.same(
    await lookup(policy({ allowPrivate: true }), 'localhost', { family: 6 }),
    { err: null, address: '::1', family: 6 },
    'localhost is ::1 too',
  );
  t.match(
    await urlProblem(policy({ allowList: ['127.0.0.1'] }), resolver, new URL('http://localhost/x')),
    /\(::1\)/,
    'both loopback addresses of localhost are judged',
  );
});

t.test('blocked destinations are recognised, wrapped or not', async (t) => {
  const e = new BlockedDestinationError('h', { settings: 's' });
  t.ok(isBlockedDestination(e));
  t.equal(refusedReason(e), 'refused to connect to h: private or loopback address (set s)');
  t.equal(refusedReason(new TypeError('fetch failed', { cause: e })), e.message, 'the refusal, not fetch’s wrapper');
  t.equal(refusedReason(Object.assign(new Error('outer'), { code: 'EBLOCKEDDEST' })), 'outer');
  t.equal(refusedReason(new Error('ECONNREFUSED')), null);
  t.equal(refusedReason(null), null);
  t.ok(isBlockedDestination(new TypeError('fetch failed', { cause: e })), 'wrapped by fetch');
  t.notOk(isBlockedDestination(new Error('ECONNREFUSED')));
  t.notOk(isBlockedDestination(null));
  t.notOk(isBlockedDestination({ code: 'ENOTFOUND', cause: { code: 'ECONNREFUSED' } }));
});

t.test("the webhooks' policy reads their settings", async (t) => {
  t.same(webhookSsrfPolicy({ allowPrivate: true, allowList: ['a.test'] } as any), {
    allowPrivate: true,
    allowList: ['a.test'],
    settings: 'webhooks.allowPrivate or webhooks.allowList',
  });
  t.same(webhookSsrfPolicy({ allowPrivate: false, allowList: [] } as any).allowPrivate, false);
});
