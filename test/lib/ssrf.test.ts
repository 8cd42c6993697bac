// The SSRF guard's address table (lib/ssrf.ts); its use is tested where it guards: webhooks
// (test/webhooks/ssrf.test.ts) and channels (web push and provider base URLs).
import t from 'tap';
import { createResolver } from '../../src/lib/dns.js';
import { addressAllowed, guardedLookup, isPrivateAddress, urlProblem, type SsrfPolicy } from '../../src/lib/ssrf.js';
import { startDnsServer } from '../helpers/dns-server.js';

t.test('private address table', async (t) => {
  const cases: [string, boolean][] = [
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['10.0.0.1', true],
    ['172.16.5.4', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['::1', true],
    ['::', true],
    ['fe80::1', true],
    ['fd00::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:8.8.8.8', false],
    ['2606:4700::1111', false],
    ['not-an-ip', true],
  ];
  for (const [ip, expected] of cases) t.equal(isPrivateAddress(ip), expected, ip);
});

// The allow list names hosts exactly (docs/configuration.md: "host names (exact)"); there is no
// wildcard form. A name that merely ends or starts like an allowed one is refused like any other.
t.test('the allow list admits exactly the names it lists, not names that look like them', async (t) => {
  const policy: SsrfPolicy = { allowPrivate: false, allowList: ['hooks.example.test'], settings: 'webhooks.allowList' };
  const PRIVATE_IP = '10.0.0.5';
  const cases: [string, boolean][] = [
    ['hooks.example.test', true],
    ['HOOKS.Example.TEST', true],
    ['evil-hooks.example.test', false],
    ['xhooks.example.test', false],
    ['hooks.example.test.evil.test', false],
    ['sub.hooks.example.test', false],
    ['example.test', false],
    ['hooks.example', false],
  ];
  for (const [host, allowed] of cases) t.equal(addressAllowed(policy, host, PRIVATE_IP), allowed, `${host} → ${PRIVATE_IP}`);

  // The same rule where it is applied: the check of a URL when it is given, and the connect-time
  // lookup, each resolving through a real DNS server on loopback.
  const zone = await startDnsServer(Object.fromEntries(cases.map(([host]) => [host.toLowerCase(), [{ type: 'A', data: PRIVATE_IP }]])));
  t.teardown(() => zone.close());
  const dns = createResolver([zone.address], 2000);
  const lookup = guardedLookup(policy, dns);
  for (const [host, allowed] of cases) {
    const problem = await urlProblem(policy, dns, new URL(`https://${host}/hook`));
    if (allowed) t.equal(problem, null, `${host}: accepted as a destination`);
    else t.match(problem, /private or loopback address \(10\.0\.0\.5\).*webhooks\.allowList/, `${host}: refused as a destination`);
    const looked = await new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
      lookup(host, {}, (err, address) => resolve({ err, address })),
    );
    if (allowed) t.same(looked, { err: null, address: PRIVATE_IP }, `${host}: dialled`);
    else t.equal(looked.err?.code, 'EBLOCKEDDEST', `${host}: never dialled`);
  }
});
