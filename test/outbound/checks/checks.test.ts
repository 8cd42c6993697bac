// The checks of a test-key message, end to end: a daemon with a loopback DNS server, a loopback
// HTTP server the links point at, and Debian's rspamd; the worker checks the test-key message after
// accept, GET /v1/messages/{id}/checks returns what it stored, POST runs the checks again. With
// checks.automatic off the worker passes a test-key message by; GET then runs the checks on demand.
import http from 'node:http';
import type net from 'node:net';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { startRspamd } from '../../helpers/scanners.js';
import { addVerifiedDomain } from '../../helpers/smtp-sink.js';
import { until } from '../../helpers/until.js';

// One rspamd for the file (it takes a while to load its rules), asking its own loopback DNS server.
let rspamdUrl: Promise<string> | null = null;
const rspamdOnce = (): Promise<string> =>
  (rspamdUrl ??= (async () => {
    const dns = await startDnsServer();
    t.teardown(() => dns.close());
    return startRspamd(t, dns.address);
  })());

/** A loopback web server: /ok 200, /missing 404 (then 200 once `fixed`), /no-head 405 to HEAD and 200 to GET. */
async function startSite(t: { teardown(fn: () => unknown): void }) {
  const asked: string[] = [];
  let fixed = false;
  const server = http.createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    if (req.url === '/ok') res.writeHead(200, { 'content-type': 'text/html' }).end('<p>fine</p>');
    else if (req.url === '/missing') res.writeHead(fixed ? 200 : 404).end(fixed ? 'here now' : 'not here');
    else if (req.url === '/no-head') res.writeHead(req.method === 'HEAD' ? 405 : 200).end(req.method === 'HEAD' ? '' : 'x'.repeat(200_000));
    else if (req.url === '/moved') res.writeHead(301, { location: '/ok' }).end();
    else res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as net.AddressInfo).port, asked, fix: () => (fixed = true) };
}

const tick = (d: TestDaemon) => d.app.workers.find((w) => w.name === 'message-checks')!.tick();

for (const db of testDatabases()) {
  t.test(`a test-key message is checked after accept; any message on demand (${db})`, async (t) => {
    const site = await startSite(t);
    const dns = await startDnsServer({ 'links.example': [{ type: 'A', data: '127.0.0.1' }] });
    t.teardown(() => dns.close());
    const rspamd = await rspamdOnce();
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DNS_SERVERS: dns.address,
        // Loopback is refused to the link check by default, as to webhooks; the test's site is on it.
        POSTERN_CHECKS_LINKS_ALLOW_PRIVATE: 'true',
        POSTERN_INBOUND_RSPAMD_URL: rspamd,
        POSTERN_TRACKING_ENABLED_BY_DEFAULT: 'true',
        POSTERN_CHECKS_BULK_DAILY_VOLUME: '2',
        // Where recipients reach tracking and unsubscribe links: https, as one-click unsubscription needs.
        POSTERN_PUBLIC_URL: 'https://mail.shop.example',
      },
    });
    const ws = await d.workspace('shop', { plan: 'pro' });
    await addVerifiedDomain(d.app, ws.id, 'shop.example');
    const site_ = `http://links.example:${site.port}`;
    const html =
      `<html><body><div style="display:flex;color:#333">` +
      `<a href="${site_}/tracked">Our shop</a></div><video src="${site_}/ok" controls></video></body></html>`;
    const text = `Fine: ${site_}/ok\nGone: ${site_}/missing\nNo HEAD: ${site_}/no-head\nMoved: ${site_}/moved\nNowhere: http://nowhere.example:${site.port}/x\n`;
    const send = async () => {
      const r = await d.request('POST', '/v1/send', {
        key: ws.test,
        body: { to: 'ann@example.com', from: 'hello@shop.example', channel: 'email', content: { subject: 'Spring sale', html, text } },
      });
      t.equal(r.status, 202);
      return r.body.id as string;
    };

    const first = await send();
    await tick(d);
    const stored = await d.app.db.selectFrom('message_checks').selectAll().execute();
    t.equal(stored.length, 1, 'the worker checked the test-key message');
    const got = await d.request('GET', `/v1/messages/${first}/checks`, { key: ws.test });
    t.equal(got.status, 200);
    const c = got.body;
    t.equal(c.id, first);
    t.equal(c.trigger, 'automatic');

    // HTML: caniemail's data says display:flex and <video> fail somewhere.
    const feature = (slug: string) => c.html.findings.find((f: { feature: string }) => f.feature === slug);
    t.equal(c.html.status, 'warn');
    t.ok(feature('css-display-flex'), 'display:flex is reported');
    t.same(feature('css-display-flex').found, ['display:flex']);
    t.ok(
      feature('html-video').clients.some(
        (x: { client: string; support: string }) => x.client === 'Gmail Desktop Webmail' && x.support === 'unsupported',
      ),
    );
    t.notOk(feature('css-color'), 'color is supported everywhere, so not listed');

    // Links: each judged; the tracked one (Postern's click URL) is excluded and never asked for.
    const link = (path: string) => c.links.links.find((l: { url: string }) => l.url.endsWith(path));
    t.equal(link('/ok').verdict, 'ok');
    t.equal(link('/ok').httpStatus, 200);
    t.equal(link('/missing').verdict, 'broken');
    t.equal(link('/missing').httpStatus, 404);
    t.equal(link('/no-head').verdict, 'ok');
    t.equal(link('/no-head').method, 'GET', 'GET after HEAD was refused');
    t.equal(link('/moved').verdict, 'ok');
    t.equal(link('/moved').finalUrl, `${site_}/ok`);
    t.equal(link('/x').verdict, 'unresolved', 'a name the loopback DNS server does not know');
    const tracked = c.links.links.filter((l: { verdict: string }) => l.verdict === 'excluded');
    t.equal(tracked.length, 1);
    t.ok(tracked[0].url.startsWith('https://mail.shop.example/t/c/'), 'the HTML link went through click tracking');
    t.notOk(
      site.asked.some((a) => a.endsWith('/tracked')),
      'the tracked destination was never asked for',
    );
    t.notOk(
      site.asked.some((a) => a.includes('/t/c/')),
      'nor the tracking URL',
    );
    t.equal(c.links.status, 'fail');

    // Spam: rspamd's score.
    t.type(c.spam.score, 'number');
    t.type(c.spam.requiredScore, 'number');
    t.ok(c.spam.action);

    // Headers: all there; one message in 24 hours is not bulk.
    const item = (h: string) => c.headers.items.find((i: { header: string }) => i.header === h);
    for (const h of ['From', 'Date', 'Message-ID']) t.equal(item(h).status, 'pass', h);
    t.equal(item('DKIM-Signature').status, 'pass');
    t.match(item('DKIM-Signature').detail, /shop\.example/);
    t.equal(c.headers.bulk, null);
    t.equal(item('List-Unsubscribe').status, 'pass');
    t.equal(c.status, 'fail', 'the worst of the four');

    // Stored: a second GET answers the same without asking the site again.
    const askedBefore = site.asked.length;
    t.same((await d.request('GET', `/v1/messages/${first}/checks`, { key: ws.test })).body, c);
    t.equal(site.asked.length, askedBefore);

    // A second message makes the workspace bulk (checks.bulkDailyVolume 2): a raw send has no
    // List-Unsubscribe, which is flagged. POST runs the checks again, on demand.
    const second = await send();
    site.fix();
    const again = await d.request('POST', `/v1/messages/${second}/checks`, { key: ws.test });
    t.equal(again.status, 200);
    t.equal(again.body.trigger, 'on_demand');
    t.match(again.body.headers.bulk, /at least 2 email messages in the 24 hours/);
    const unsubscribe = again.body.headers.items.find((i: { header: string }) => i.header === 'List-Unsubscribe');
    t.equal(unsubscribe.status, 'fail');
    t.match(unsubscribe.detail, /missing; required of bulk mail/);
    t.equal(again.body.links.links.find((l: { url: string }) => l.url.endsWith('/missing')).verdict, 'ok', 'asked again');

    // A template send is bulk mail and carries one-click List-Unsubscribe.
    t.equal((await d.request('POST', '/v1/templates', { key: ws.test, body: { slug: 'news', channel: 'email' } })).status, 201);
    const draft = { content: { subject: 'News', text: 'Read more: {{link}}' }, variables: [] };
    t.equal((await d.request('PUT', '/v1/templates/news/draft', { key: ws.test, body: draft })).status, 200);
    const news = await d.request('POST', '/v1/send', {
      key: ws.test,
      body: { template: 'news', to: 'ann@example.com', from: 'hello@shop.example', vars: { link: `${site_}/ok` } },
    });
    t.equal(news.status, 202);
    const newsChecks = (await d.request('GET', `/v1/messages/${news.body.id}/checks`, { key: ws.test })).body;
    t.equal(newsChecks.headers.bulk, 'a template send');
    const oneClick = newsChecks.headers.items.find((i: { header: string }) => i.header === 'List-Unsubscribe');
    t.equal(oneClick.status, 'pass');
    t.match(oneClick.detail, /^one-click: <https:\/\/mail\.shop\.example\/u\//);
    t.equal(newsChecks.html.status, 'skipped', 'no HTML part');
    t.same(
      newsChecks.links.links.map((l: { verdict: string }) => l.verdict),
      ['ok'],
    );

    // Errors in the envelope: an unknown message, a message of another channel.
    const missing = await d.request('GET', '/v1/messages/msg_nothere/checks', { key: ws.test });
    t.equal(missing.status, 404);
    t.equal(missing.body.error.code, 'not_found');
    const sms = await d.request('POST', '/v1/send', {
      key: ws.test,
      body: { to: '+14155550100', channel: 'sms', content: { body: 'Hi' } },
    });
    t.equal(sms.status, 202);
    const notEmail = await d.request('GET', `/v1/messages/${sms.body.id}/checks`, { key: ws.test });
    t.equal(notEmail.status, 409);
    t.equal(notEmail.body.error.code, 'conflict');
    // The other environment's key does not see the message.
    t.equal((await d.request('GET', `/v1/messages/${first}/checks`, { key: ws.live })).status, 404);
  });

  t.test(`checks.automatic off: a test-key message is not checked by itself, on demand it is (${db})`, async (t) => {
    const site = await startSite(t);
    const dns = await startDnsServer({ 'links.example': [{ type: 'A', data: '127.0.0.1' }] });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_CHECKS_AUTOMATIC: 'false',
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_CHECKS_LINKS_ALLOW_PRIVATE: 'true',
      },
    });
    const ws = await d.workspace('shop', { plan: 'pro' });
    const r = await d.request('POST', '/v1/send', {
      key: ws.test,
      body: {
        to: 'ann@example.com',
        channel: 'email',
        content: { subject: 'Spring sale', text: `See http://links.example:${site.port}/ok\n` },
      },
    });
    t.equal(r.status, 202);
    const id = r.body.id as string;
    const status = async () => (await d.request('GET', `/v1/messages/${id}`, { key: ws.test })).body.status as string;
    await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    await until('the test-key message to be delivered', async () => (await status()) === 'delivered');
    // The automatic pass runs to its end and passes the message by: no claim, no result.
    await tick(d);
    await tick(d);
    t.same(await d.app.db.selectFrom('message_checks').selectAll().execute(), [], 'nothing checked automatically');
    t.same(site.asked, [], 'and no link asked for');

    // GET finds nothing stored and runs the checks now, on demand; the result is kept.
    const got = await d.request('GET', `/v1/messages/${id}/checks`, { key: ws.test });
    t.equal(got.status, 200);
    t.equal(got.body.id, id);
    t.equal(got.body.trigger, 'on_demand');
    t.equal(got.body.links.links.find((l: { url: string }) => l.url.endsWith('/ok')).verdict, 'ok');
    t.ok(site.asked.length > 0, 'the link was asked for on demand');
    const rows = await d.app.db.selectFrom('message_checks').select(['trigger']).execute();
    t.same(rows, [{ trigger: 'on_demand' }]);
    t.same((await d.request('GET', `/v1/messages/${id}/checks`, { key: ws.test })).body, got.body, 'stored: the same answer again');

    // POST runs them again, on demand.
    const again = await d.request('POST', `/v1/messages/${id}/checks`, { key: ws.test });
    t.equal(again.status, 200);
    t.equal(again.body.trigger, 'on_demand');
    t.equal(again.body.headers.items.find((i: { header: string }) => i.header === 'Message-ID').status, 'pass');
  });
}
