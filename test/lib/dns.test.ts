// The daemon's resolver against the loopback DNS server the other tests rely on.
import t from 'tap';
import { createResolver, isNxDomain } from '../../src/lib/dns.js';
import { startDnsServer } from '../helpers/dns-server.js';

t.test('resolver asks the configured server', async (t) => {
  const dns = await startDnsServer({
    'example.test': [
      { type: 'MX', data: { preference: 20, exchange: 'mx2.example.test' } },
      { type: 'MX', data: { preference: 10, exchange: 'mx1.example.test' } },
      { type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' },
    ],
    'mx1.example.test': [{ type: 'A', data: '127.0.0.1' }],
    'long.example.test': [{ type: 'TXT', data: 'v=DKIM1; k=rsa; p=' + 'A'.repeat(400) }],
  });
  t.teardown(dns.close);
  const r = createResolver([dns.address], 2000);
  const mx = await r.resolveMx('example.test');
  t.same(
    mx.sort((a, b) => a.priority - b.priority).map((m) => m.exchange),
    ['mx1.example.test', 'mx2.example.test'],
  );
  t.same(await r.resolve4('mx1.example.test'), ['127.0.0.1']);
  t.same(await r.resolveTxt('example.test'), [['v=spf1 ip4:127.0.0.1 -all']]);
  t.equal((await r.resolveTxt('long.example.test'))[0].join('').length, 418);
  const err = await r.resolveMx('missing.example.test').catch((e) => e);
  t.ok(isNxDomain(err), 'unknown names are NXDOMAIN');
  const nodata = await r.resolveMx('mx1.example.test').catch((e) => e);
  t.equal(nodata.code, 'ENODATA');
  t.ok(dns.queries.includes('MX example.test'));
});
