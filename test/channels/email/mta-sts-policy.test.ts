// The parts of MTA-STS (RFC 8461) that are pure text: the TXT record, the policy file, and which MX
// host names a policy's patterns cover. The fetch, the cache and enforcement run against real peers
// in transport-security.test.ts.
import t from 'tap';
import { mxMatches, parseStsPolicy, parseStsRecord } from '../../../src/channels/email/mta-sts.js';

t.test('the _mta-sts TXT record', async (t) => {
  t.same(parseStsRecord(['v=STSv1; id=20160831085700Z;']), { id: '20160831085700Z' });
  t.same(parseStsRecord(['v=STSv1;id=abc']), { id: 'abc' }, 'no space, no trailing semicolon');
  t.same(parseStsRecord(['v=spf1 -all', 'v=STSv1; id=1;']), { id: '1' }, 'other TXT records at the name are ignored');
  t.equal(parseStsRecord(['v=spf1 -all']), null, 'no STSv1 record: no policy');
  t.equal(parseStsRecord([]), null);
  t.match(parseStsRecord(['v=STSv1; id=1;', 'v=STSv1; id=2;']), { problem: /2 _mta-sts records/ }, 'two records: none is believed');
  t.match(parseStsRecord(['v=STSv1; id=not-alnum;']), { problem: /no valid id/ });
  t.match(parseStsRecord(['v=STSv1; id=' + 'a'.repeat(33)]), { problem: /no valid id/ }, 'ids are at most 32 characters');
});

t.test('the policy file', async (t) => {
  const body = 'version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.Example.NET.\r\nmax_age: 604800\r\nextension: ignored\r\n';
  t.same(parseStsPolicy('example.com', '1', body), {
    domain: 'example.com',
    id: '1',
    mode: 'enforce',
    mx: ['mail.example.com', '*.example.net'],
    maxAge: 604800,
  });
  t.match(
    parseStsPolicy('e.com', '1', 'version: STSv1\nmode: none\nmax_age: 0\n'),
    { mode: 'none', mx: [] },
    'LF line ends; none needs no mx',
  );
  const bad: [string, RegExp][] = [
    ['mode: enforce\nmx: a\nmax_age: 1\n', /version is missing/],
    ['version: STSv2\nmode: enforce\nmx: a\nmax_age: 1\n', /version is STSv2/],
    ['version: STSv1\nmode: strict\nmx: a\nmax_age: 1\n', /mode is strict/],
    ['version: STSv1\nmode: enforce\nmx: a\n', /max_age is missing/],
    ['version: STSv1\nmode: enforce\nmx: a\nmax_age: 31557601\n', /max_age is 31557601/],
    ['version: STSv1\nmode: enforce\nmx: a\nmax_age: -1\n', /max_age is -1/],
    ['version: STSv1\nmode: testing\nmax_age: 86400\n', /lists no mx/],
    ['<html>not a policy</html>', /version is missing/],
  ];
  for (const [text, why] of bad) t.throws(() => parseStsPolicy('e.com', '1', text), why);
});

t.test('mx patterns', async (t) => {
  const patterns = ['mail.example.com', '*.example.net'];
  t.ok(mxMatches(patterns, 'mail.example.com'));
  t.ok(mxMatches(patterns, 'MAIL.example.com.'), 'case and the trailing dot do not matter');
  t.ok(mxMatches(patterns, 'mx1.example.net'), 'a wildcard covers one label');
  t.notOk(mxMatches(patterns, 'a.b.example.net'), '…and only one');
  t.notOk(mxMatches(patterns, 'example.net'), '…and not the bare domain');
  t.notOk(mxMatches(patterns, 'evilexample.net'));
  t.notOk(mxMatches(patterns, 'mail.example.com.evil.test'));
  t.notOk(mxMatches([], 'mail.example.com'));
});
