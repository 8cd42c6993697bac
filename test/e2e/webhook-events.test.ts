// Each event kind from a real flow: SMTP in → message.received; test-mode send → message.delivered
// (and the simulated outcomes → sent, failed, suppressed, opted_out, blocked); a live email to a
// loopback MX → message.delivered, then the open pixel → message.opened and a click → message.clicked.
import { simpleParser } from 'mailparser';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';
import { tick } from '../helpers/webhooks.js';
import { startReceiver, verify } from '../helpers/webhook-receiver.js';

const PRIVATE_OK = { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' };
const dispatch = (d: TestDaemon) => d.app.workers.find((w) => w.name === 'dispatcher')!.tick();

for (const db of testDatabases()) {
  t.test(`SMTP in → message.received, to the bound endpoint or every subscriber (${db})`, async (t) => {
    const env = await setup(t, { db, env: PRIVATE_OK });
    const bound = await startReceiver();
    const all = await startReceiver();
    t.teardown(() => bound.close());
    t.teardown(() => all.close());
    const epBound = (
      await env.d.request('POST', '/v1/webhooks', { key: env.ws.live, body: { url: bound.url, events: ['message.received'] } })
    ).body;
    const epAll = (await env.d.request('POST', '/v1/webhooks', { key: env.ws.live, body: { url: all.url, events: ['message.received'] } }))
      .body;
    const support = await createAddress(env, { localPart: 'support', webhookEndpointId: epBound.id });
    const sales = await createAddress(env, { localPart: 'sales' });

    t.match(
      await sendRaw(
        env.d.smtpPort,
        { from: 'alice@sender.example', to: [support.address] },
        simpleMail({ to: support.address, subject: 'Help me' }),
      ),
      /^250 /,
    );
    t.match(
      await sendRaw(
        env.d.smtpPort,
        { from: 'alice@sender.example', to: [sales.address] },
        simpleMail({ to: sales.address, subject: 'Buy' }),
      ),
      /^250 /,
    );
    await tick(env.d);

    t.same(
      bound.requests.map((r) => r.json.data.subject).sort(),
      ['Buy', 'Help me'],
      'the bound endpoint gets its address and the unbound one',
    );
    t.same(
      all.requests.map((r) => r.json.data.subject),
      ['Buy'],
      'the other subscriber gets only unbound mail',
    );
    const got = bound.requests.find((r) => r.json.data.subject === 'Help me')!;
    t.ok(verify(epBound.secret, got));
    t.match(got.json, {
      id: /^evt_/,
      type: 'message.received',
      createdAt: /Z$/,
      data: { id: /^rcv_/, status: 'received', address: support.address, from: { email: 'alice@sender.example' } },
    });
    const detail = await env.d.request('GET', `/v1/inbound/messages/${got.json.data.id}`, { key: env.ws.live });
    t.same(got.json.data, detail.body, 'data is the Received message as the API returns it');
    t.ok(verify(epAll.secret, all.requests[0]));
  });

  t.test(`test-mode sends → lifecycle events (${db})`, async (t) => {
    const d = await bootDaemon(t, { db, env: PRIVATE_OK });
    const ws = await d.workspace('acme');
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const ep = (await d.request('POST', '/v1/webhooks', { key: ws.test, body: { url: rx.url } })).body;
    const ids: Record<string, string> = {};
    for (const to of ['someone@example.com', 'sent@example.com', 'failed@example.com', 'suppressed@example.com', 'opted_out@example.com']) {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.test,
        body: { to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      t.equal(r.status, 202);
      ids[to] = r.body.id;
    }
    await dispatch(d);
    await tick(d);
    const byMessage = new Map(rx.requests.map((r) => [r.json.data.publicId, r.json]));
    t.equal(byMessage.get(ids['someone@example.com'])?.type, 'message.delivered');
    t.equal(byMessage.get(ids['sent@example.com'])?.type, 'message.sent');
    t.equal(byMessage.get(ids['failed@example.com'])?.type, 'message.failed');
    t.equal(byMessage.get(ids['suppressed@example.com'])?.type, 'message.suppressed');
    t.equal(byMessage.get(ids['opted_out@example.com'])?.type, 'message.opted_out');
    const delivered = byMessage.get(ids['someone@example.com'])!;
    const api = await d.request('GET', `/v1/messages/${delivered.data.publicId}`, { key: ws.test });
    t.match(delivered.data, { publicId: api.body.publicId, status: 'delivered', livemode: false, recipient: 'someone@example.com' });
    t.ok(rx.requests.every((r) => verify(ep.secret, r)));
  });

  t.test(`live email → message.delivered; open pixel → message.opened; click → message.clicked (${db})`, async (t) => {
    const sink = await startSink(t);
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: {
        ...PRIVATE_OK,
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_DELIVERY_PORT: String(sink.port),
        POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const ep = (
      await d.request('POST', '/v1/webhooks', {
        key: ws.live,
        body: { url: rx.url, events: ['message.delivered', 'message.opened', 'message.clicked'] },
      })
    ).body;
    t.equal((await d.cli('tracking', 'enable', '--workspace', 'acme')).code, 0);
    const sent = await d.request('POST', '/v1/send-raw', {
      key: ws.live,
      body: {
        to: 'bob@example.net',
        channel: 'email',
        content: { subject: 'Hi', html: '<p>Hello <a href="https://example.org/welcome">welcome</a></p>', text: 'Hello' },
      },
    });
    t.equal(sent.status, 202);
    await dispatch(d);
    await tick(d);
    t.same(
      rx.requests.map((r) => r.json.type),
      ['message.delivered'],
    );

    const html = String((await simpleParser(sink.received.at(-1)!.raw)).html);
    const pixel = /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1];
    const click = /href="([^"]+\/t\/c\/[^"]+)"/.exec(html)![1].replace(/&amp;/g, '&');
    await fetch(pixel);
    await tick(d);
    const opened = rx.requests.find((r) => r.json.type === 'message.opened');
    t.ok(opened, 'message.opened arrived');
    t.match(opened!.json.data, { publicId: sent.body.id, status: 'delivered', openedAt: /Z$/ });
    await fetch(click, { redirect: 'manual' });
    await tick(d);
    const clicked = rx.requests.find((r) => r.json.type === 'message.clicked');
    t.ok(clicked, 'message.clicked arrived');
    t.match(JSON.stringify(clicked!.json.data), /https:\/\/example\.org\/welcome/, 'the clicked link is in the payload');
    t.ok(rx.requests.every((r) => verify(ep.secret, r)));
    await fetch(pixel);
    await tick(d);
    t.equal(rx.requests.filter((r) => r.json.type === 'message.opened').length, 1, 'only the first open is an event');
  });
}
