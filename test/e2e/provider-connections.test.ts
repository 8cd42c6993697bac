// Provider connections through the whole daemon: the CLI stores them (credentials encrypted), the
// API lists them without secrets, the dispatcher sends live messages through them against loopback
// fakes (retries on 429/503), Twilio callbacks move messages only with a valid signature, and no
// credential ever appears in a response or a log line.
import { generateKeyPairSync } from 'node:crypto';
import { statSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { twilioSignature } from '../../src/channels/sms/twilio.js';
import { signHttpSms } from '../../src/channels/sms/http-gateway.js';
import { startHttpFake, type Answer } from '../helpers/provider-fakes.js';
import { selfSignedCert } from '../helpers/self-signed.js';

const AUTH_TOKEN = 'twilio-auth-token-7f3c9e1b5d';
const GATEWAY_SECRET = 'gateway-hmac-secret-a1b2c3';

async function dispatch(d: TestDaemon) {
  await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
}

async function message(d: TestDaemon, key: string, id: string) {
  const r = await d.request('GET', `/v1/messages/${id}`, { key });
  return r.body;
}

for (const db of testDatabases()) {
  t.test(`provider connections end to end on ${db}`, async (t) => {
    // The provider fakes listen on loopback: the channels' SSRF guard admits it through the allow list.
    const d = await bootDaemon(t, { db, env: { POSTERN_CHANNELS_ALLOW_LIST: '127.0.0.1' } });
    const acme = await d.workspace('acme');
    const answers: Answer[] = [];
    const twilio = await startHttpFake(
      t,
      () => answers.shift() ?? { status: 201, body: { sid: `SM${Date.now()}${Math.random().toString(36).slice(2, 8)}`, status: 'queued' } },
    );

    const added = await d.cli(
      'connection',
      'add',
      '--workspace',
      'acme',
      '--env',
      'live',
      '--channel',
      'sms',
      '--provider',
      'twilio',
      '--account-sid',
      'AC123',
      '--auth-token',
      AUTH_TOKEN,
      '--from',
      '+15005550006',
      '--base-url',
      twilio.url,
    );
    t.equal(added.code, 0, added.stderr);
    const connId = added.json.id;

    t.test('the CLI and the API show the connection without its secret', async (t) => {
      t.match(added.json, {
        id: /^[0-9a-f-]{36}$/,
        env: 'live',
        channel: 'sms',
        provider: 'twilio',
        settings: { accountSid: 'AC123', from: '+15005550006', baseUrl: twilio.url },
        credentials: [{ name: 'authToken', set: true }],
      });
      t.notMatch(added.stdout, AUTH_TOKEN);
      const list = await d.cli('connection', 'list', '--workspace', 'acme');
      // The configured email connection (one per environment) comes first, then the stored ones.
      t.same(
        list.json.map((c: { channel: string; env: string }) => `${c.channel}/${c.env}`),
        ['email/live', 'email/test', 'sms/live'],
      );
      t.notMatch(list.stdout, AUTH_TOKEN);
      const api = await d.request('GET', '/v1/connections', { key: acme.live });
      t.equal(api.status, 200);
      t.equal(api.body.data.length, 2);
      t.match(api.body.data[0], { channel: 'email', provider: 'smtp-direct', source: 'config', id: /^[0-9a-f-]{36}$/ });
      t.equal(api.body.data[1].id, connId);
      t.notMatch(JSON.stringify(api.body), AUTH_TOKEN);
      const testEnv = await d.request('GET', '/v1/connections', { key: acme.test });
      t.same(
        testEnv.body.data.map((c: { channel: string }) => c.channel),
        ['email'],
        'the test environment has its own (only the configured email one)',
      );
    });

    t.test('credentials are encrypted at rest with the generated secrets.key', async (t) => {
      const row = await d.app.db.selectFrom('provider_connections').selectAll().where('id', '=', connId).executeTakeFirstOrThrow();
      t.match(row.secrets, /^v1:/);
      t.notMatch(row.secrets, AUTH_TOKEN);
      t.notMatch(row.settings, AUTH_TOKEN);
      const keyFile = path.join(d.dataDir, 'secrets.key');
      t.equal(statSync(keyFile).mode & 0o777, 0o600);
      t.equal(Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64').length, 32);
    });

    t.test('CLI validation', async (t) => {
      const dup = await d.cli(
        'connection',
        'add',
        '--workspace',
        'acme',
        '--env',
        'live',
        '--channel',
        'sms',
        '--provider',
        'http',
        '--url',
        'http://127.0.0.1:1/',
        '--secret',
        's',
      );
      t.equal(dup.code, 1);
      t.equal(JSON.parse(dup.stderr).error.code, 'already_exists');
      const unknown = await d.cli(
        'connection',
        'add',
        '--workspace',
        'acme',
        '--env',
        'test',
        '--channel',
        'sms',
        '--provider',
        'http',
        '--bogus',
        'x',
      );
      t.equal(unknown.code, 2);
      t.match(unknown.stderr, /--bogus/);
      const missing = await d.cli(
        'connection',
        'add',
        '--workspace',
        'acme',
        '--env',
        'test',
        '--channel',
        'sms',
        '--provider',
        'twilio',
        '--account-sid',
        'AC1',
      );
      t.equal(missing.code, 1);
      const missingError = JSON.parse(missing.stderr).error;
      t.equal(missingError.code, 'invalid_body');
      t.same(
        missingError.issues.map((i: { path: string }) => i.path).sort(),
        ['authToken', 'from'],
        'every missing Twilio setting is listed',
      );
      const wrongSetting = await d.cli(
        'connection',
        'add',
        '--workspace',
        'acme',
        '--env',
        'test',
        '--channel',
        'push',
        '--provider',
        'fcm',
        '--url',
        'http://x',
      );
      t.equal(wrongSetting.code, 1);
      t.match(wrongSetting.stderr, /fcm has no setting url/);
      const badProvider = await d.cli(
        'connection',
        'add',
        '--workspace',
        'acme',
        '--env',
        'test',
        '--channel',
        'sms',
        '--provider',
        'nexmo',
      );
      t.match(JSON.parse(badProvider.stderr).error.issues, [{ path: 'provider', message: /twilio, http/ }]);
    });

    t.test('a live SMS goes through Twilio: sent, provider fields and segments on the message', async (t) => {
      const sent = await d.request('POST', '/v1/send-raw', {
        key: acme.live,
        body: { channel: 'sms', to: '+14155550100', content: { body: 'Your code is 123456' } },
      });
      t.equal(sent.status, 202, JSON.stringify(sent.body));
      await dispatch(d);
      const m = await message(d, acme.live, sent.body.id);
      t.match(m, { status: 'sent', provider: 'twilio', providerConnectionId: connId, providerMessageId: /^SM/ });
      t.ok(
        m.timeline.some((e: { e: string }) => e.e === 'sms: 1 segment (GSM-7, 19 septets)'),
        'segments on the timeline',
      );
      const form = new URLSearchParams(twilio.requests.at(-1)!.body.toString());
      t.equal(form.get('StatusCallback'), `${d.url}/callbacks/twilio/${connId}`);

      t.test('status callback: forged is refused, valid moves the message to delivered', async (t) => {
        const url = `${d.url}/callbacks/twilio/${connId}`;
        const params = { MessageSid: m.providerMessageId, MessageStatus: 'delivered', AccountSid: 'AC123', To: '+14155550100' };
        const forged = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-twilio-signature': twilioSignature('wrong-token', url, params),
          },
          body: new URLSearchParams(params),
        });
        t.equal(forged.status, 401);
        const unsigned = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(params),
        });
        t.equal(unsigned.status, 401);
        t.equal((await message(d, acme.live, sent.body.id)).status, 'sent', 'unchanged by forged callbacks');
        const ok = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(AUTH_TOKEN, url, params) },
          body: new URLSearchParams(params),
        });
        t.equal(ok.status, 204);
        const after = await message(d, acme.live, sent.body.id);
        t.equal(after.status, 'delivered');
        t.ok(after.timeline.some((e: { e: string }) => e.e === 'twilio callback: delivered'));
        const events = await d.app.db
          .selectFrom('events')
          .select(['type', 'data'])
          .where('workspace_id', '=', acme.id)
          .where('type', '=', 'message.delivered')
          .execute();
        t.equal(events.length, 1);
        t.equal(JSON.parse(events[0].data).publicId, sent.body.id);
        const unknown = await fetch(`${d.url}/callbacks/twilio/00000000-0000-7000-8000-000000000000`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'a=b',
        });
        t.equal(unknown.status, 404);
      });
    });

    t.test('429 and 503 from the provider are retried with backoff, then sent', async (t) => {
      answers.push(
        { status: 503, body: { code: 20500, message: 'Internal' } },
        { status: 429, headers: { 'retry-after': '600' }, body: { code: 20429, message: 'Too many' } },
      );
      const before = twilio.requests.length;
      const sent = await d.request('POST', '/v1/send-raw', {
        key: acme.live,
        body: { channel: 'sms', to: '+14155550101', content: { body: 'retry me' } },
      });
      await dispatch(d);
      let m = await message(d, acme.live, sent.body.id);
      t.match(m, { status: 'dispatched', error: /HTTP 503/ });
      t.ok(m.timeline.some((e: { e: string }) => e.e === 'deferred'));
      await dispatch(d);
      t.equal(twilio.requests.length, before + 1, 'not retried before the backoff');
      d.clock.advance(60_000);
      await dispatch(d);
      m = await message(d, acme.live, sent.body.id);
      t.match(m, { status: 'dispatched', error: /HTTP 429/ });
      d.clock.advance(300_000);
      await dispatch(d);
      t.equal(twilio.requests.length, before + 2, 'Retry-After (10 min) beats the 5 min schedule');
      d.clock.advance(300_000);
      await dispatch(d);
      m = await message(d, acme.live, sent.body.id);
      t.equal(m.status, 'sent');
      t.equal(twilio.requests.length, before + 3);
    });

    t.test('test keys never reach the provider', async (t) => {
      const before = twilio.requests.length;
      const sent = await d.request('POST', '/v1/send-raw', {
        key: acme.test,
        body: { channel: 'sms', to: '+14155550100', content: { body: 'test mode' } },
      });
      await dispatch(d);
      t.not((await message(d, acme.test, sent.body.id)).provider, 'twilio');
      t.equal(twilio.requests.length, before);
    });

    t.test('APNs 410 Unregistered fails the message (suppress) through the daemon', async (t) => {
      const { key, cert } = selfSignedCert();
      const server = http2.createSecureServer({ key, cert });
      server.on('stream', (stream) => {
        stream.resume();
        stream.on('end', () => {
          stream.respond({ ':status': 410 });
          stream.end(JSON.stringify({ reason: 'Unregistered', timestamp: 1 }));
        });
      });
      const sessions = new Set<http2.ServerHttp2Session>();
      server.on('session', (s) => sessions.add(s));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      t.teardown(
        () =>
          new Promise<void>((r) => {
            server.close(() => r());
            for (const s of sessions) s.destroy();
          }),
      );
      const dir = d.dataDir;
      const p8 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
      writeFileSync(path.join(dir, 'AuthKey.p8'), p8);
      writeFileSync(path.join(dir, 'ca.pem'), cert);
      const add = await d.cli(
        'connection',
        'add',
        '--workspace',
        'acme',
        '--env',
        'live',
        '--channel',
        'push',
        '--provider',
        'apns',
        '--team-id',
        'TEAM',
        '--key-id',
        'KID',
        '--key-file',
        path.join(dir, 'AuthKey.p8'),
        '--topic',
        'com.example.app',
        '--base-url',
        `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
        '--ca-file',
        path.join(dir, 'ca.pem'),
      );
      t.equal(add.code, 0, add.stderr);
      t.notMatch(add.stdout, /PRIVATE KEY/);
      const sent = await d.request('POST', '/v1/send-raw', {
        key: acme.live,
        body: { channel: 'push', to: 'ab'.repeat(32), content: { title: 'Hi', body: 'there' } },
      });
      t.equal(sent.status, 202, JSON.stringify(sent.body));
      await dispatch(d);
      const m = await message(d, acme.live, sent.body.id);
      t.match(m, { status: 'failed', provider: 'apns', providerConnectionId: add.json.id, error: 'apns: HTTP 410 Unregistered' });

      // The token is on the suppression list now: the next send is held without a request to APNs.
      const list = await d.request('GET', '/v1/suppressions', { key: acme.live });
      t.match(
        list.body.data.find((e: { address: string }) => e.address === 'ab'.repeat(32)),
        { reason: 'unregistered' },
      );
      let requests = 0;
      server.on('stream', () => requests++);
      const again = await d.request('POST', '/v1/send-raw', {
        key: acme.live,
        body: { channel: 'push', to: 'ab'.repeat(32), content: { title: 'Hi', body: 'again' } },
      });
      await dispatch(d);
      t.match(await message(d, acme.live, again.body.id), { status: 'suppressed' });
      t.equal(requests, 0, 'APNs was not contacted');
    });

    t.test('generic HTTP gateway: signed request and signed callback', async (t) => {
      const ws = await d.workspace('beta');
      const gw = await startHttpFake(t, () => ({ status: 200, body: { id: 'gw-1', status: 'sent' } }));
      const add = await d.cli(
        'connection',
        'add',
        '--workspace',
        'beta',
        '--env',
        'live',
        '--channel',
        'sms',
        '--provider',
        'http',
        '--url',
        `${gw.url}/send`,
        '--secret',
        GATEWAY_SECRET,
        '--from',
        'Beta',
      );
      t.equal(add.code, 0, add.stderr);
      const sent = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { channel: 'sms', to: '+14155550100', content: { body: 'Привет' } },
      });
      await dispatch(d);
      const req = gw.requests[0];
      const ts = String(req.headers['x-postern-timestamp']);
      t.equal(req.headers['x-postern-signature'], signHttpSms(GATEWAY_SECRET, ts, req.body.toString()));
      t.same(JSON.parse(req.body.toString()), {
        id: sent.body.id,
        to: '+14155550100',
        from: 'Beta',
        body: 'Привет',
        encoding: 'UCS-2',
        segments: 1,
        callbackUrl: `${d.url}/callbacks/sms-http/${add.json.id}`,
      });
      t.match(await message(d, ws.live, sent.body.id), { status: 'sent', provider: 'http', providerMessageId: 'gw-1' });

      const cb = `${d.url}/callbacks/sms-http/${add.json.id}`;
      const body = JSON.stringify({ id: 'gw-1', status: 'failed', error: 'handset unreachable' });
      const now = String(Math.floor(d.clock.now().getTime() / 1000));
      const bad = await fetch(cb, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-postern-timestamp': now, 'x-postern-signature': signHttpSms('nope', now, body) },
        body,
      });
      t.equal(bad.status, 401);
      const stale = String(Number(now) - 3600);
      const old = await fetch(cb, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-postern-timestamp': stale,
          'x-postern-signature': signHttpSms(GATEWAY_SECRET, stale, body),
        },
        body,
      });
      t.equal(old.status, 401, 'a replayed (old) callback is refused');
      const good = await fetch(cb, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-postern-timestamp': now,
          'x-postern-signature': signHttpSms(GATEWAY_SECRET, now, body),
        },
        body,
      });
      t.equal(good.status, 204);
      t.match(await message(d, ws.live, sent.body.id), { status: 'failed', error: 'sms gateway: failed: handset unreachable' });
    });

    t.test('remove: the channel stops sending live', async (t) => {
      const rm = await d.cli('connection', 'remove', connId);
      t.same(rm.json, { id: connId, removed: true });
      t.equal((await d.cli('connection', 'remove', connId)).code, 1);
      const sent = await d.request('POST', '/v1/send-raw', {
        key: acme.live,
        body: { channel: 'sms', to: '+14155550100', content: { body: 'x' } },
      });
      await dispatch(d);
      t.match(await message(d, acme.live, sent.body.id), { status: 'failed', error: /no live sms provider connection/ });
    });

    t.test('no credential in any log line', async (t) => {
      const all = d.logs.join('\n');
      t.ok(d.logs.length > 0);
      for (const secret of [AUTH_TOKEN, GATEWAY_SECRET, 'PRIVATE KEY']) t.notMatch(all, secret, secret);
    });
  });
}
