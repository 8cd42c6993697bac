import { createPublicKey } from 'node:crypto';
import t from 'tap';
import webpush from 'web-push';
import { createWebPushTransport } from '../../../src/channels/web-push/vapid.js';
import { connection, delivery, startHttpFake, transportDeps, verifyJwt, type Answer } from '../../helpers/provider-fakes.js';
import { createResolver } from '../../../src/lib/dns.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { makeTestCa } from '../../helpers/self-signed.js';
import { decrypt, newSubscription } from '../../helpers/web-push-decrypt.js';

const vapid = webpush.generateVAPIDKeys();
const content = {
  title: 'New reply',
  body: 'Ada answered your thread',
  icon: 'https://example.com/i.png',
  clickUrl: 'https://example.com/t/1',
  data: { threadId: 't_1' },
  badge: 'https://example.com/b.png',
};

function vapidPublicKey(b64url: string) {
  const raw = Buffer.from(b64url, 'base64url');
  return createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33).toString('base64url') },
    format: 'jwk',
  });
}

async function setup(t: Parameters<typeof startHttpFake>[0], answer: () => Answer, settings: Record<string, string> = {}) {
  const fake = await startHttpFake(t, answer);
  const conn = connection(
    'web-push',
    'vapid',
    { publicKey: vapid.publicKey, subject: 'mailto:ops@example.com', ttl: '3600', urgency: 'high', ...settings },
    { privateKey: vapid.privateKey },
  );
  return { fake, conn, tr: createWebPushTransport(conn, transportDeps()) };
}

t.test('web-push: VAPID-signed aes128gcm request the subscriber can decrypt', async (t) => {
  const s = await setup(t, () => ({ status: 201, headers: { location: 'https://push.example/m/abc' } }));
  const sub = newSubscription();
  const endpoint = `${s.fake.url}/push/v2/device-1`;
  const out = await s.tr.deliver(delivery('web-push', sub.json(endpoint), content));
  t.same(out, { kind: 'sent', provider: 'web-push', providerConnectionId: s.conn.id, providerMessageId: 'https://push.example/m/abc' });
  const r = s.fake.requests[0];
  t.equal(r.method, 'POST');
  t.equal(r.url, '/push/v2/device-1');
  t.equal(r.headers['content-encoding'], 'aes128gcm');
  t.equal(r.headers['content-type'], 'application/octet-stream');
  t.equal(r.headers.ttl, '3600');
  t.equal(r.headers.urgency, 'high');
  t.same(JSON.parse(decrypt(sub, r.body)), { ...content });

  const m = /^vapid t=([\w.-]+), k=([\w-]+)$/.exec(String(r.headers.authorization));
  t.ok(m, 'VAPID authorization header');
  t.equal(m![2], vapid.publicKey);
  const jwt = verifyJwt(m![1], vapidPublicKey(vapid.publicKey));
  t.equal(jwt.header.alg, 'ES256');
  t.equal(jwt.claims.aud, s.fake.url);
  t.equal(jwt.claims.sub, 'mailto:ops@example.com');
  t.type(jwt.claims.exp, 'number');
});

t.test('web-push: answers mapped onto outcomes', async (t) => {
  const cases: [string, Answer, Record<string, unknown>][] = [
    ['410 gone: failed + suppress', { status: 410 }, { kind: 'failed', suppress: true }],
    ['404: failed + suppress', { status: 404 }, { kind: 'failed', suppress: true }],
    ['429: deferred', { status: 429, headers: { 'retry-after': '120' } }, { kind: 'deferred', retryAt: new Date('2030-01-01T00:02:00Z') }],
    ['503: deferred', { status: 503 }, { kind: 'deferred', error: 'web-push: HTTP 503' }],
    ['413: failed', { status: 413 }, { kind: 'failed', error: 'web-push: HTTP 413' }],
  ];
  for (const [name, answer, expected] of cases) {
    const s = await setup(t, () => answer);
    const out = await s.tr.deliver(delivery('web-push', newSubscription().json(`${s.fake.url}/p`), content));
    t.match(out, expected, name);
    if (!name.startsWith('4') || name.startsWith('413') || name.startsWith('429'))
      t.notOk((out as { suppress?: boolean }).suppress, `${name}: not suppressed`);
  }
});

t.test('web-push: a recipient that is not a subscription never reaches the network', async (t) => {
  const s = await setup(t, () => ({ status: 201 }));
  for (const bad of ['not json', '{"endpoint":"ftp://x"}', JSON.stringify({ endpoint: `${s.fake.url}/p`, keys: { p256dh: 'abc' } })]) {
    t.match(await s.tr.deliver(delivery('web-push', bad, content)), { kind: 'suppressed' }, bad);
  }
  // Well-formed but not a P-256 point: the library refuses it, and it can never work.
  t.match(
    await s.tr.deliver(
      delivery('web-push', JSON.stringify({ endpoint: `${s.fake.url}/p`, keys: { p256dh: 'AAAA', auth: 'BBBB' } }), content),
    ),
    { kind: 'failed', suppress: true },
  );
  t.equal(s.fake.requests.length, 0);
});

const GUARDED = { allowPrivate: false, allowList: [], settings: 'channels.allowPrivate or channels.allowList' };

t.test('web-push: a subscription endpoint on a private address is refused without a connection', async (t) => {
  const fake = await startHttpFake(t, () => ({ status: 201 }));
  const conn = connection(
    'web-push',
    'vapid',
    { publicKey: vapid.publicKey, subject: 'mailto:ops@example.com' },
    { privateKey: vapid.privateKey },
  );
  const sub = newSubscription();
  const push = (tr: ReturnType<typeof createWebPushTransport>, endpoint: string) =>
    tr.deliver(delivery('web-push', sub.json(endpoint), content));

  const guarded = createWebPushTransport(conn, transportDeps({ ssrf: GUARDED }));
  for (const endpoint of [`${fake.url}/push/1`, `http://[::1]:${fake.url.split(':')[2]}/push/1`, 'http://169.254.169.254/latest']) {
    t.match(
      await push(guarded, endpoint),
      {
        kind: 'failed',
        provider: 'web-push',
        error: /^web-push: refused to connect to .*: private or loopback address \(set channels\.allowPrivate or channels\.allowList\)$/,
      },
      endpoint,
    );
  }
  t.equal(fake.connections(), 0, 'no connection was made');

  // A public-looking name that resolves to loopback (DNS rebinding) is refused at connect time.
  const dns = await startDnsServer({ 'push.rebind.test': [{ type: 'A', data: '127.0.0.1' }] });
  t.teardown(() => dns.close());
  const resolver = createResolver([dns.address], 1000);
  const byName = createWebPushTransport(conn, transportDeps({ ssrf: GUARDED, dns: resolver }));
  const port = new URL(fake.url).port;
  t.match(await push(byName, `http://push.rebind.test:${port}/push/1`), {
    kind: 'failed',
    error: /refused to connect to push\.rebind\.test/,
  });
  t.equal(fake.connections(), 0, 'still no connection');

  // The operator's allow list lets a push service on the local network through, by address or name.
  const allowed = createWebPushTransport(conn, transportDeps({ ssrf: { ...GUARDED, allowList: ['127.0.0.0/8'] } }));
  t.match(await push(allowed, `${fake.url}/push/1`), { kind: 'sent' });
  const named = createWebPushTransport(conn, transportDeps({ ssrf: { ...GUARDED, allowList: ['push.rebind.test'] }, dns: resolver }));
  t.match(await push(named, `http://push.rebind.test:${port}/push/2`), { kind: 'sent' });
  t.equal(fake.requests.length, 2);
});

t.test('web-push: a private push gateway with its own CA (the ca setting)', async (t) => {
  const ca = makeTestCa();
  const fake = await startHttpFake(t, () => ({ status: 201, headers: { location: 'https://gw/m/1' } }), { tls: ca.issue(['127.0.0.1']) });
  const settings = { publicKey: vapid.publicKey, subject: 'mailto:ops@example.com' };
  const sub = newSubscription();
  const untrusted = createWebPushTransport(connection('web-push', 'vapid', settings, { privateKey: vapid.privateKey }), transportDeps());
  t.match(await untrusted.deliver(delivery('web-push', sub.json(`${fake.url}/p`), content)), {
    kind: 'deferred',
    error: /web-push: network error/,
  });
  t.equal(fake.requests.length, 0);
  const trusted = createWebPushTransport(
    connection('web-push', 'vapid', { ...settings, ca: ca.cert }, { privateKey: vapid.privateKey }),
    transportDeps(),
  );
  t.match(await trusted.deliver(delivery('web-push', sub.json(`${fake.url}/p`), content)), {
    kind: 'sent',
    providerMessageId: 'https://gw/m/1',
  });
});
