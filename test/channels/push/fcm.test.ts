import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { createFcmTransport, FCM_SCOPE } from '../../../src/channels/push/fcm.js';
import { connection, delivery, startHttpFake, transportDeps, verifyJwt, type Answer } from '../../helpers/provider-fakes.js';

const TOKEN = 'fcm-registration-token:APA91b' + 'x'.repeat(100);
const push = { title: 'Hi', body: 'There', data: { orderId: 'o_1', count: 2 }, badge: 4, sound: 'default' };

async function setup(t: Parameters<typeof startHttpFake>[0], send: () => Answer, tokenAnswer?: () => Answer) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let issued = 0;
  const oauth = await startHttpFake(
    t,
    tokenAnswer ?? (() => ({ status: 200, body: { access_token: `ya29.token-${++issued}`, expires_in: 3599, token_type: 'Bearer' } })),
  );
  const fcm = await startHttpFake(t, send);
  const conn = connection(
    'push',
    'fcm',
    {
      projectId: 'demo-proj',
      clientEmail: 'postern@demo-proj.iam.gserviceaccount.com',
      privateKeyId: 'kid-1',
      tokenUrl: `${oauth.url}/token`,
      baseUrl: fcm.url,
    },
    {
      privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    },
  );
  const deps = transportDeps();
  return { oauth, fcm, conn, deps, publicKey, tr: createFcmTransport(conn, deps) };
}

t.test('fcm: service-account JWT exchanged for a cached token; the exact send', async (t) => {
  const s = await setup(t, () => ({ status: 200, body: { name: 'projects/demo-proj/messages/0:1700000000000000%abc' } }));
  const out = await s.tr.deliver(delivery('push', TOKEN, push));
  t.same(out, {
    kind: 'sent',
    provider: 'fcm',
    providerConnectionId: s.conn.id,
    providerMessageId: 'projects/demo-proj/messages/0:1700000000000000%abc',
  });

  const tok = s.oauth.requests[0];
  t.equal(tok.url, '/token');
  t.equal(tok.headers['content-type'], 'application/x-www-form-urlencoded');
  const form = new URLSearchParams(tok.body.toString());
  t.equal(form.get('grant_type'), 'urn:ietf:params:oauth:grant-type:jwt-bearer');
  const jwt = verifyJwt(form.get('assertion')!, s.publicKey);
  const iat = Math.floor(s.deps.clock.now().getTime() / 1000);
  t.same(jwt.header, { alg: 'RS256', typ: 'JWT', kid: 'kid-1' });
  t.same(jwt.claims, {
    iss: 'postern@demo-proj.iam.gserviceaccount.com',
    scope: FCM_SCOPE,
    aud: `${s.oauth.url}/token`,
    iat,
    exp: iat + 3600,
  });

  const send = s.fcm.requests[0];
  t.equal(send.url, '/v1/projects/demo-proj/messages:send');
  t.equal(send.headers.authorization, 'Bearer ya29.token-1');
  t.same(JSON.parse(send.body.toString()), {
    message: {
      token: TOKEN,
      notification: { title: 'Hi', body: 'There' },
      data: { orderId: 'o_1', count: '2' },
      android: { notification: { sound: 'default' } },
      apns: { payload: { aps: { badge: 4, sound: 'default' } } },
    },
  });

  // Cached until a minute before expiry; concurrent sends share one exchange.
  await Promise.all([s.tr.deliver(delivery('push', TOKEN, push)), s.tr.deliver(delivery('push', TOKEN, push))]);
  t.equal(s.oauth.requests.length, 1, 'cached token reused');
  s.deps.clock.advance(3599_000 - 60_000 - 1000);
  await s.tr.deliver(delivery('push', TOKEN, push));
  t.equal(s.oauth.requests.length, 1, 'still cached just before the margin');
  s.deps.clock.advance(2000);
  await Promise.all([s.tr.deliver(delivery('push', TOKEN, push)), s.tr.deliver(delivery('push', TOKEN, push))]);
  t.equal(s.oauth.requests.length, 2, 'one new exchange after expiry');
  t.equal(s.fcm.requests.at(-1)!.headers.authorization, 'Bearer ya29.token-2');
});

t.test('fcm: answers mapped onto outcomes', async (t) => {
  const fcmError = (code: number, status: string, errorCode?: string) => ({
    error: {
      code,
      status,
      message: 'x',
      details: errorCode ? [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }] : [],
    },
  });
  const cases: [string, Answer, Record<string, unknown>][] = [
    [
      'UNREGISTERED: failed + suppress',
      { status: 404, body: fcmError(404, 'NOT_FOUND', 'UNREGISTERED') },
      { kind: 'failed', suppress: true, error: 'fcm: HTTP 404 UNREGISTERED' },
    ],
    [
      '429 QUOTA_EXCEEDED: deferred',
      { status: 429, headers: { 'retry-after': '10' }, body: fcmError(429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED') },
      { kind: 'deferred', retryAt: new Date('2030-01-01T00:00:10Z') },
    ],
    ['503 UNAVAILABLE: deferred', { status: 503, body: fcmError(503, 'UNAVAILABLE', 'UNAVAILABLE') }, { kind: 'deferred' }],
    [
      '400 INVALID_ARGUMENT: failed',
      { status: 400, body: fcmError(400, 'INVALID_ARGUMENT', 'INVALID_ARGUMENT') },
      { kind: 'failed', error: 'fcm: HTTP 400 INVALID_ARGUMENT' },
    ],
    ['401: deferred, token dropped', { status: 401, body: fcmError(401, 'UNAUTHENTICATED') }, { kind: 'deferred' }],
  ];
  for (const [name, answer, expected] of cases) {
    const s = await setup(t, () => answer);
    t.match(await s.tr.deliver(delivery('push', TOKEN, push)), expected, name);
    if (name.startsWith('401')) {
      await s.tr.deliver(delivery('push', TOKEN, push));
      t.equal(s.oauth.requests.length, 2, 'a new token is fetched after a 401');
    }
  }
});

t.test('fcm: token endpoint failures', async (t) => {
  const down = await setup(
    t,
    () => ({ status: 200, body: { name: 'n' } }),
    () => ({ status: 503, body: {} }),
  );
  t.match(await down.tr.deliver(delivery('push', TOKEN, push)), { kind: 'deferred', error: 'fcm token exchange: HTTP 503' });
  const denied = await setup(
    t,
    () => ({ status: 200, body: { name: 'n' } }),
    () => ({ status: 400, body: { error: 'invalid_grant' } }),
  );
  t.match(await denied.tr.deliver(delivery('push', TOKEN, push)), { kind: 'failed', error: 'fcm token exchange: HTTP 400 invalid_grant' });
  t.equal(denied.fcm.requests.length, 0);
});

t.test('fcm: a token or base URL on a private address is refused without a connection, unless allow-listed', async (t) => {
  const s = await setup(t, () => ({ status: 200, body: { name: 'projects/demo-proj/messages/1' } }));
  const policy = { allowPrivate: false, allowList: [], settings: 'channels.allowPrivate or channels.allowList' };
  const guarded = createFcmTransport(s.conn, transportDeps({ ssrf: policy }));
  t.match(await guarded.deliver(delivery('push', TOKEN, push)), {
    kind: 'failed',
    error: /^fcm token exchange: refused to connect to 127\.0\.0\.1: private or loopback address/,
  });
  t.equal(s.oauth.connections() + s.fcm.connections(), 0, 'no connection was made');
  const allowed = createFcmTransport(s.conn, transportDeps({ ssrf: { ...policy, allowList: ['127.0.0.1/32'] } }));
  t.match(await allowed.deliver(delivery('push', TOKEN, push)), { kind: 'sent' });
});
