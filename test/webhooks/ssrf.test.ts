import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { emit, sampleMessage, tick } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

for (const db of testDatabases()) {
  t.test(`SSRF guard at creation and at connect time (${db})`, async (t) => {
    const dns = await startDnsServer({
      'public.example.test': [{ type: 'A', data: '93.184.216.34' }],
      'internal.example.test': [{ type: 'A', data: '192.168.1.5' }],
      'rebind.example.test': [{ type: 'A', data: '93.184.216.34' }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, { db, env: { POSTERN_DNS_SERVERS: dns.address } });
    const acme = await d.workspace('acme');
    const rx = await startReceiver();
    t.teardown(() => rx.close());

    for (const url of [
      `http://127.0.0.1:${rx.port}/`,
      'http://localhost/x',
      'http://api.localhost/x',
      'http://[::1]/x',
      'http://10.1.2.3/x',
      'http://169.254.169.254/latest/meta-data',
      'http://internal.example.test/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://0x7f000001/x',
    ]) {
      const r = await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url } });
      t.equal(r.status, 422, url);
      t.match(r.body.error, { code: 'invalid_body', issues: [{ path: 'url', message: /private or loopback/ }] }, url);
    }
    t.equal((await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: 'https://public.example.test/hook' } })).status, 201);
    t.equal(
      (await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: 'https://nowhere.example.test/hook' } })).status,
      201,
      'an unresolvable name is accepted',
    );

    // Accepted while it pointed outside; then DNS changes to loopback. The connection is refused.
    const ws = await d.workspace('rebind');
    const ep = await d.request('POST', '/v1/webhooks', { key: ws.live, body: { url: `http://rebind.example.test:${rx.port}/hook` } });
    t.equal(ep.status, 201);
    dns.set('rebind.example.test', [{ type: 'A', data: '127.0.0.1' }]);
    const patch = await d.request('PATCH', `/v1/webhooks/${ep.body.id}`, {
      key: ws.live,
      body: { url: `http://127.0.0.1:${rx.port}/hook` },
    });
    t.equal(patch.status, 422, 'a PATCH to a private URL is refused too');
    await emit(d, ws.id, 'message.sent', sampleMessage(1));
    await tick(d);
    t.equal(rx.requests.length, 0, 'nothing reached the loopback receiver');
    const [dl] = (await d.request('GET', `/v1/webhooks/${ep.body.id}/deliveries`, { key: ws.live })).body.data;
    t.match(dl, { status: 'pending', attemptCount: 1, lastStatusCode: null, lastError: /refused to connect to rebind\.example\.test/ });
  });

  t.test(`the allow list admits named hosts and CIDR ranges (${db})`, async (t) => {
    const dns = await startDnsServer({ 'hooks.internal.test': [{ type: 'A', data: '127.0.0.1' }] });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_WEBHOOKS_ALLOW_LIST: 'hooks.internal.test,127.0.0.2/32' },
    });
    const acme = await d.workspace('acme');
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const byName = await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: `http://hooks.internal.test:${rx.port}/hook` } });
    t.equal(byName.status, 201);
    const byCidr = await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: 'http://127.0.0.2/hook' } });
    t.equal(byCidr.status, 201, 'inside an allowed CIDR');
    t.equal(
      (await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: 'http://127.0.0.3/hook' } })).status,
      422,
      'outside it',
    );
    await d.request('DELETE', `/v1/webhooks/${byCidr.body.id}`, { key: acme.live });
    await emit(d, acme.id, 'message.sent', sampleMessage(1));
    await tick(d);
    t.equal(rx.requests.length, 1, 'delivered to the allow-listed name');
  });

  t.test(`IPv4 inside IPv6 is refused, in the URL and in AAAA answers, at creation and at connect time (${db})`, async (t) => {
    const dns = await startDnsServer({
      'compat.example.test': [{ type: 'AAAA', data: '::127.0.0.1' }],
      'mapped.example.test': [{ type: 'AAAA', data: '::ffff:127.0.0.1' }],
      'sixtofour.example.test': [{ type: 'AAAA', data: '2002:a9fe:a9fe::1' }],
      'later.example.test': [{ type: 'A', data: '93.184.216.34' }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, { db, env: { POSTERN_DNS_SERVERS: dns.address } });
    const acme = await d.workspace('acme');
    const rx = await startReceiver();
    t.teardown(() => rx.close());

    for (const url of [
      `http://[::127.0.0.1]:${rx.port}/`,
      'http://[::ffff:0:127.0.0.1]/x',
      'http://[0:0:0:0:0:ffff:7f00:0001]/x',
      'http://[2002:7f00:1::1]/x',
      'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x',
      'http://[64:ff9b::a9fe:a9fe]/x',
      'http://[64:ff9b:1::7f00:1]/x',
      'http://compat.example.test/x',
      'http://mapped.example.test/x',
      'http://sixtofour.example.test/x',
    ]) {
      const r = await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url } });
      t.match(
        r,
        { status: 422, body: { error: { code: 'invalid_body', issues: [{ path: 'url', message: /private or loopback/ }] } } },
        url,
      );
    }

    // Accepted while it pointed outside; then its only answer is loopback as IPv4-compatible IPv6.
    const ep = await d.request('POST', '/v1/webhooks', { key: acme.live, body: { url: `http://later.example.test:${rx.port}/hook` } });
    t.equal(ep.status, 201);
    dns.set('later.example.test', [{ type: 'AAAA', data: '::127.0.0.1' }]);
    await emit(d, acme.id, 'message.sent', sampleMessage(1));
    await tick(d);
    t.equal(rx.requests.length, 0, 'nothing reached the loopback receiver');
    const [dl] = (await d.request('GET', `/v1/webhooks/${ep.body.id}/deliveries`, { key: acme.live })).body.data;
    t.match(dl, {
      status: 'pending',
      attemptCount: 1,
      lastStatusCode: null,
      lastError: /refused to connect to later\.example\.test: private or loopback/,
    });
  });
}
