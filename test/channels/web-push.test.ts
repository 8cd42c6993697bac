import { createPublicKey } from 'node:crypto';
import t from 'tap';
import webpush from 'web-push';
import { createWebPushTransport } from '../../src/outbound/channels/web-push/web-push.js';
import { connection, delivery, startHttpFake, transportDeps, verifyJwt, type Answer } from './helpers/fakes.js';
import { decrypt, newSubscription } from './helpers/web-push-decrypt.js';

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
