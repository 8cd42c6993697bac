import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { createApnsTransport } from '../../../src/channels/push/apns.js';
import { connection, delivery, transportDeps, verifyJwt } from '../../helpers/provider-fakes.js';
import { createResolver } from '../../../src/lib/dns.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { selfSignedCert } from '../../helpers/self-signed.js';

interface H2Request {
  headers: http2.IncomingHttpHeaders;
  body: string;
  httpVersion: string;
}

async function startApnsFake(
  t: { teardown(fn: () => unknown): void },
  answer: (r: H2Request) => { status: number; headers?: Record<string, string>; body?: unknown },
) {
  const { key, cert } = selfSignedCert();
  const requests: H2Request[] = [];
  let sessions = 0;
  const server = http2.createSecureServer({ key, cert });
  const open = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions++;
    open.add(s);
  });
  server.on('stream', (stream, headers) => {
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (body += c));
    stream.on('end', () => {
      const r = { headers, body, httpVersion: '2.0' };
      requests.push(r);
      const a = answer(r);
      stream.respond({ ':status': a.status, ...a.headers });
      stream.end(a.body === undefined ? '' : JSON.stringify(a.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of open) s.destroy();
      }),
  );
  let connections = 0;
  server.on('connection', () => connections++);
  return { url, cert, requests, sessions: () => sessions, connections: () => connections };
}

const TOKEN = 'a'.repeat(64);
const p8 = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });

t.test('apns: HTTP/2 request with an ES256 provider token, headers and payload', async (t) => {
  const fake = await startApnsFake(t, () => ({ status: 200, headers: { 'apns-id': 'EC1BF194-B3B2-424A-89A5-C7E6A4CE7C4E' } }));
  const { privateKey, publicKey } = p8();
  const conn = connection(
    'push',
    'apns',
    { teamId: 'TEAM123456', keyId: 'KEY1234567', topic: 'com.example.app', pushType: 'alert', baseUrl: fake.url, ca: fake.cert },
    {
      key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    },
  );
  const deps = transportDeps();
  const tr = createApnsTransport(conn, deps);
  t.teardown(() => tr.close?.());
  const out = await tr.deliver(
    delivery('push', TOKEN, {
      title: 'Order shipped',
      body: 'Arrives Tuesday',
      data: { orderId: 'o_1', nested: { a: 1 } },
      badge: 3,
      sound: 'chime.caf',
    }),
  );
  t.same(out, { kind: 'sent', provider: 'apns', providerConnectionId: conn.id, providerMessageId: 'EC1BF194-B3B2-424A-89A5-C7E6A4CE7C4E' });
  const r = fake.requests[0];
  t.equal(r.headers[':method'], 'POST');
  t.equal(r.headers[':path'], `/3/device/${TOKEN}`);
  t.equal(r.headers['apns-topic'], 'com.example.app');
  t.equal(r.headers['apns-push-type'], 'alert');
  t.equal(r.headers['apns-priority'], '10');
  t.same(JSON.parse(r.body), {
    orderId: 'o_1',
    nested: { a: 1 },
    aps: { alert: { title: 'Order shipped', body: 'Arrives Tuesday' }, badge: 3, sound: 'chime.caf' },
  });
  const auth = String(r.headers.authorization);
  t.match(auth, /^bearer [\w-]+\.[\w-]+\.[\w-]+$/);
  const jwt = verifyJwt(auth.slice('bearer '.length), publicKey);
  t.same(jwt.header, { alg: 'ES256', typ: 'JWT', kid: 'KEY1234567' });
  t.same(jwt.claims, { iss: 'TEAM123456', iat: Math.floor(deps.clock.now().getTime() / 1000) });

  // A data-only push is a background push.
  await tr.deliver(delivery('push', TOKEN, { title: '', body: '', data: { sync: true }, badge: null, sound: null }));
  t.equal(fake.requests[1].headers['apns-push-type'], 'background');
  t.equal(fake.requests[1].headers['apns-priority'], '5');
  t.same(JSON.parse(fake.requests[1].body), { sync: true, aps: { 'content-available': 1 } });
  t.equal(fake.sessions(), 1, 'one HTTP/2 session carries both requests');

  // The token is reused within 50 minutes and refreshed after (Apple rejects tokens over an hour old).
  t.equal(fake.requests[1].headers.authorization, auth, 'same token a moment later');
  deps.clock.advance(49 * 60_000);
  await tr.deliver(delivery('push', TOKEN, { title: 't', body: 'b', data: {}, badge: null, sound: null }));
  t.equal(fake.requests[2].headers.authorization, auth, 'same token at 49 minutes');
  deps.clock.advance(2 * 60_000);
  await tr.deliver(delivery('push', TOKEN, { title: 't', body: 'b', data: {}, badge: null, sound: null }));
  const refreshed = String(fake.requests[3].headers.authorization);
  t.not(refreshed, auth, 'a new token after 50 minutes');
  t.equal(verifyJwt(refreshed.slice(7), publicKey).claims.iat, Math.floor(deps.clock.now().getTime() / 1000));
});

t.test('apns: answers mapped onto outcomes', async (t) => {
  const cases: [string, { status: number; headers?: Record<string, string>; body?: unknown }, Record<string, unknown>][] = [
    [
      '410 Unregistered: failed + suppress',
      { status: 410, body: { reason: 'Unregistered', timestamp: 1700000000000 } },
      { kind: 'failed', suppress: true, error: 'apns: HTTP 410 Unregistered' },
    ],
    ['400 BadDeviceToken: failed + suppress', { status: 400, body: { reason: 'BadDeviceToken' } }, { kind: 'failed', suppress: true }],
    [
      '400 PayloadTooLarge: failed',
      { status: 400, body: { reason: 'PayloadTooLarge' } },
      { kind: 'failed', error: 'apns: HTTP 400 PayloadTooLarge' },
    ],
    ['429 TooManyRequests: deferred', { status: 429, body: { reason: 'TooManyRequests' } }, { kind: 'deferred' }],
    ['503 ServiceUnavailable: deferred', { status: 503, body: { reason: 'ServiceUnavailable' } }, { kind: 'deferred' }],
    ['403 ExpiredProviderToken: deferred', { status: 403, body: { reason: 'ExpiredProviderToken' } }, { kind: 'deferred' }],
  ];
  for (const [name, answer, expected] of cases) {
    const fake = await startApnsFake(t, () => answer);
    const conn = connection(
      'push',
      'apns',
      { teamId: 'T', keyId: 'K', topic: 'com.example.app', baseUrl: fake.url, ca: fake.cert },
      { key: p8().privateKey.export({ type: 'pkcs8', format: 'pem' }) as string },
    );
    const tr = createApnsTransport(conn, transportDeps());
    t.match(await tr.deliver(delivery('push', TOKEN, { title: 't', body: 'b', data: {}, badge: null, sound: null })), expected, name);
    await tr.close?.();
  }
});

t.test('apns: an untrusted certificate or a closed port is deferred; a malformed token is never sent', async (t) => {
  const fake = await startApnsFake(t, () => ({ status: 200 }));
  const key = p8().privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const untrusted = createApnsTransport(
    connection('push', 'apns', { teamId: 'T', keyId: 'K', topic: 'x', baseUrl: fake.url }, { key }),
    transportDeps(),
  );
  t.match(await untrusted.deliver(delivery('push', TOKEN, { title: 't', body: 'b', data: {}, badge: null, sound: null })), {
    kind: 'deferred',
  });
  await untrusted.close?.();
  t.equal(fake.requests.length, 0);
  const tr = createApnsTransport(
    connection('push', 'apns', { teamId: 'T', keyId: 'K', topic: 'x', baseUrl: fake.url, ca: fake.cert }, { key }),
    transportDeps(),
  );
  t.match(await tr.deliver(delivery('push', 'not-a-token', { title: 't', body: 'b', data: {}, badge: null, sound: null })), {
    kind: 'suppressed',
  });
  await tr.close?.();
  t.equal(fake.requests.length, 0);
});

t.test('apns: a base URL on a private address is refused without a connection, unless allow-listed', async (t) => {
  const fake = await startApnsFake(t, () => ({ status: 200, headers: { 'apns-id': 'id-1' } }));
  const key = p8().privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const conn = connection('push', 'apns', { teamId: 'T', keyId: 'K', topic: 'x', baseUrl: fake.url, ca: fake.cert }, { key });
  const policy = { allowPrivate: false, allowList: [], settings: 'channels.allowPrivate or channels.allowList' };
  const guarded = createApnsTransport(conn, transportDeps({ ssrf: policy }));
  t.match(await guarded.deliver(delivery('push', TOKEN, { title: 't', body: 'b', data: {}, badge: null, sound: null })), {
    kind: 'failed',
    error: 'apns: refused to connect to 127.0.0.1: private or loopback address (set channels.allowPrivate or channels.allowList)',
  });
  await guarded.close?.();
  t.equal(fake.connections(), 0, 'no connection was made');
  const allowed = createApnsTransport(conn, transportDeps({ ssrf: { ...policy, allowList: ['127.0.0.1'] } }));
  t.match(await allowed.deliver(delivery('push', TOKEN, { title: 't', body: 'b', data: {}, badge: null, sound: null })), { kind: 'sent' });
  await allowed.close?.();
});

t.test('apns: a host name that resolves to a private address is refused at connect time', async (t) => {
  const fake = await startApnsFake(t, () => ({ status: 200 }));
  const dns = await startDnsServer({ 'apns.rebind.test': [{ type: 'A', data: '127.0.0.1' }] });
  t.teardown(() => dns.close());
  const key = p8().privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const baseUrl = `https://apns.rebind.test:${new URL(fake.url).port}`;
  const conn = connection('push', 'apns', { teamId: 'T', keyId: 'K', topic: 'x', baseUrl, ca: fake.cert }, { key });
  const policy = { allowPrivate: false, allowList: [], settings: 'channels.allowPrivate or channels.allowList' };
  const tr = createApnsTransport(conn, transportDeps({ ssrf: policy, dns: createResolver([dns.address], 1000) }));
  t.match(await tr.deliver(delivery('push', TOKEN, { title: 't', body: 'b', data: {}, badge: null, sound: null })), {
    kind: 'failed',
    error: /^apns: refused to connect to apns\.rebind\.test/,
  });
  await tr.close?.();
  t.equal(fake.connections(), 0);
});
