// The link check's rules, against a loopback web server and a loopback DNS server: the SSRF guard
// refuses loopback unless allowed (each redirect hop too), the bounds on links and redirects hold,
// and links are found once each in HTML and text.
import http from 'node:http';
import type net from 'node:net';
import t from 'tap';
import { createResolver } from '../../../src/lib/dns.js';
import { ANSWER_TTL_MS, createLinkChecker, linksOf, type LinkSettings } from '../../../src/outbound/checks/links.js';
import { startDnsServer } from '../../helpers/dns-server.js';

const SETTINGS: LinkSettings = {
  max: 50,
  concurrency: 2,
  timeout: 5000,
  maxBytes: 1024,
  maxRedirects: 2,
  allowPrivate: false,
  allowList: [],
};

t.test('links are found once each, in order, from HTML and text', async (t) => {
  const found = linksOf(
    '<p><a class="x" href="https://a.example/one?x=1&amp;y=2">1</a><a href=\'mailto:x@y\'>m</a><!-- <a href="https://hidden.example/"> -->' +
      '<area shape="rect" href="https://a.example/two"><a href="#top">top</a></p>',
    'See https://a.example/two, and (https://b.example/three).',
  );
  t.same(found, [
    { url: 'https://a.example/one?x=1&y=2', in: ['html'] },
    { url: 'https://a.example/two', in: ['html', 'text'] },
    { url: 'https://b.example/three', in: ['text'] },
  ]);
});

t.test('the SSRF guard, the bounds', async (t) => {
  const asked: string[] = [];
  const server = http.createServer((req, res) => {
    asked.push(req.url ?? '');
    if (req.url === '/loop') res.writeHead(302, { location: '/loop' }).end();
    else if (req.url === '/to-loopback') res.writeHead(302, { location: `http://127.0.0.1:${port}/ok` }).end();
    else res.writeHead(200).end('fine');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as net.AddressInfo).port;
  const dnsServer = await startDnsServer({ 'site.example': [{ type: 'A', data: '127.0.0.1' }] });
  t.teardown(() => dnsServer.close());
  const dns = createResolver([dnsServer.address], 2000);
  const links = (...paths: string[]) => paths.map((p) => ({ url: `http://site.example:${port}${p}`, in: ['text' as const] }));

  let now = 0;
  const guarded = createLinkChecker({ dns, settings: SETTINGS, now: () => now });
  t.teardown(() => guarded.close());
  const refused = await guarded.check([...links('/ok'), { url: `http://127.0.0.1:${port}/ok`, in: ['text'] }], () => false);
  t.same(
    refused.map((r) => r.verdict),
    ['refused', 'refused'],
    'loopback by name and by address',
  );
  t.match(refused[0].detail, /checks\.links\.allowPrivate or checks\.links\.allowList/);
  t.same(asked, [], 'nothing reached the server');

  const allowed = createLinkChecker({ dns, settings: { ...SETTINGS, allowList: ['site.example'], max: 2 }, now: () => now });
  t.teardown(() => allowed.close());
  const results = await allowed.check(links('/ok', '/to-loopback', '/loop', '/excluded'), (u) => u.endsWith('/excluded'));
  t.equal(results[0].verdict, 'ok', 'an allowed name');
  t.equal(results[1].verdict, 'refused', 'a redirect to a refused address is refused');
  t.equal(results[2].verdict, 'skipped', 'over checks.links.max');
  t.match(results[2].detail, /checks\.links\.max/);
  t.equal(results[3].verdict, 'excluded');
  t.notOk(asked.includes('/excluded'));

  // Automatic checks reuse an answer for ANSWER_TTL_MS; on demand asks again.
  const count = (p: string) => asked.filter((a) => a === p).length;
  const before = count('/ok');
  await allowed.check(links('/ok'), () => false, { reuse: true });
  t.equal(count('/ok'), before, 'reused');
  await allowed.check(links('/ok'), () => false);
  t.equal(count('/ok'), before + 1, 'asked again on demand');
  now += ANSWER_TTL_MS;
  await allowed.check(links('/ok'), () => false, { reuse: true });
  t.equal(count('/ok'), before + 2, 'asked again once the answer is old');

  const loops = await allowed.check(links('/loop'), () => false);
  t.equal(loops[0].verdict, 'broken');
  t.match(loops[0].detail, /more than 2 redirects/);
});
