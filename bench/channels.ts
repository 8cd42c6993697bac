// Sends per second per provider transport against loopback fakes of each provider API (no
// database, no dispatcher: this measures our request building, signing, encryption and HTTP
// client per channel). Bounded: a fixed number of sends per provider at fixed concurrency.
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createECDH, generateKeyPairSync, randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import webpush from 'web-push';
import type { ChannelTransport, Delivery } from '../src/channel.js';
import { transportFor } from '../src/channels/connection-transport.js';
import { connection, delivery, transportDeps } from '../test/helpers/provider-fakes.js';
import { selfSignedCert } from '../test/helpers/self-signed.js';

const SENDS = 2000;
const CONCURRENCY = 32;

function httpFake(answer: (url: string) => { status: number; body: string }) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const a = answer(req.url ?? '/');
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(a.body);
    });
  });
  return new Promise<{ url: string; close(): void }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => {
          server.closeAllConnections();
          server.close();
        },
      }),
    ),
  );
}

async function measure(label: string, transport: ChannelTransport, d: Delivery): Promise<void> {
  await transport.deliver(d); // warm-up: connection, tokens
  let next = 0;
  let ok = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < SENDS) {
        next++;
        const out = await transport.deliver(d);
        if (out.kind === 'sent' || out.kind === 'delivered') ok++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${label.padEnd(22)} ${String(Math.round(ok / seconds)).padStart(6)} sends/s  (${ok}/${SENDS} accepted, concurrency ${CONCURRENCY})`,
  );
  await transport.close?.();
}

export async function run(): Promise<void> {
  const deps = transportDeps({ timeoutMs: 10_000 });
  const closers: (() => void)[] = [];

  const twilio = await httpFake(() => ({ status: 201, body: JSON.stringify({ sid: 'SM1', status: 'queued' }) }));
  closers.push(twilio.close);
  await measure(
    'sms (twilio)',
    transportFor(connection('sms', 'twilio', { accountSid: 'AC1', from: '+15005550006', baseUrl: twilio.url }, { authToken: 't' }), deps),
    delivery('sms', '+14155550100', { body: 'Your code is 123456' }),
  );

  const gw = await httpFake(() => ({ status: 200, body: JSON.stringify({ id: 'g1', status: 'sent' }) }));
  closers.push(gw.close);
  await measure(
    'sms (http gateway)',
    transportFor(connection('sms', 'http', { url: gw.url }, { secret: 's' }), deps),
    delivery('sms', '+14155550100', { body: 'Your code is 123456' }),
  );

  const { key, cert } = selfSignedCert();
  const h2 = http2.createSecureServer({ key, cert });
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on('session', (s) => sessions.add(s));
  h2.on('stream', (stream) => {
    stream.resume();
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'apns-id': 'id' });
      stream.end();
    });
  });
  await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
  closers.push(() => {
    for (const s of sessions) s.destroy();
    h2.close();
  });
  const p8 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const push = { title: 'Order shipped', body: 'Arrives Tuesday', data: { orderId: 'o_1' }, badge: 1, sound: 'default' };
  await measure(
    'push (apns, http/2)',
    transportFor(
      connection(
        'push',
        'apns',
        { teamId: 'T', keyId: 'K', topic: 'com.example', baseUrl: `https://127.0.0.1:${(h2.address() as AddressInfo).port}`, ca: cert },
        { key: p8 },
      ),
      deps,
    ),
    delivery('push', 'ab'.repeat(32), push),
  );

  const fcm = await httpFake((url) =>
    url === '/token'
      ? { status: 200, body: JSON.stringify({ access_token: 'ya29', expires_in: 3600 }) }
      : { status: 200, body: JSON.stringify({ name: 'projects/p/messages/1' }) },
  );
  closers.push(fcm.close);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  await measure(
    'push (fcm)',
    transportFor(
      connection(
        'push',
        'fcm',
        { projectId: 'p', clientEmail: 'sa@p.iam', tokenUrl: `${fcm.url}/token`, baseUrl: fcm.url },
        { privateKey: rsa },
      ),
      deps,
    ),
    delivery('push', 'fcm-token-' + 'x'.repeat(100), push),
  );

  const wp = await httpFake(() => ({ status: 201, body: '' }));
  closers.push(wp.close);
  const vapid = webpush.generateVAPIDKeys();
  const ua = createECDH('prime256v1');
  ua.generateKeys();
  const sub = JSON.stringify({
    endpoint: `${wp.url}/push/1`,
    keys: { p256dh: ua.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') },
  });
  await measure(
    'web-push (vapid)',
    transportFor(
      connection(
        'web-push',
        'vapid',
        { publicKey: vapid.publicKey, subject: 'mailto:ops@example.com', ttl: '60', urgency: 'normal' },
        { privateKey: vapid.privateKey },
      ),
      deps,
    ),
    delivery('web-push', sub, { title: 'Hi', body: 'There', icon: null, clickUrl: null, data: {}, badge: null }),
  );

  for (const c of closers) c();
}
