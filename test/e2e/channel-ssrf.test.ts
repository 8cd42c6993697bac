// The SSRF guard of the channels, through the whole daemon: a web-push subscription whose endpoint
// is on a private address fails with a clear error and no connection is ever made (not on the
// first attempt, not on a retry), and a provider base URL on one is refused when the connection is
// added; `channels.allowList` lets a gateway on the local network through.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import webpush from 'web-push';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startHttpFake } from '../helpers/provider-fakes.js';
import { makeTestCa } from '../helpers/self-signed.js';
import { newSubscription } from '../helpers/web-push-decrypt.js';

const vapid = webpush.generateVAPIDKeys();

async function addVapid(d: TestDaemon, caFile: string) {
  const r = await d.cli(
    'connection',
    'add',
    '--workspace',
    'acme',
    '--env',
    'live',
    '--channel',
    'web-push',
    '--provider',
    'vapid',
    '--public-key',
    vapid.publicKey,
    '--private-key',
    vapid.privateKey,
    '--subject',
    'mailto:ops@example.com',
    '--ca-file',
    caFile,
  );
  if (r.code !== 0) throw new Error(r.stderr);
}

async function pushTo(d: TestDaemon, key: string, endpoint: string) {
  const r = await d.request('POST', '/v1/send-raw', {
    key,
    body: { to: newSubscription().json(endpoint), channel: 'web-push', content: { title: 'Hi', body: 'there' } },
  });
  if (r.status !== 202) throw new Error(JSON.stringify(r.body));
  await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
  return (await d.request('GET', `/v1/messages/${r.body.id}`, { key })).body;
}

for (const db of testDatabases()) {
  t.test(`a web-push endpoint on loopback fails, with no connection; the allow list admits it (${db})`, async (t) => {
    // A push gateway on the local network, with a certificate of a private CA (the connection's ca).
    const ca = makeTestCa();
    const gateway = await startHttpFake(t, () => ({ status: 201, headers: { location: 'https://gw/m/1' } }), {
      tls: ca.issue(['127.0.0.1']),
    });
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-push-ca-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const caFile = path.join(dir, 'ca.pem');
    writeFileSync(caFile, ca.cert);

    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    await addVapid(d, caFile);
    const m = await pushTo(d, ws.live, `${gateway.url}/push/1`);
    t.match(m, {
      status: 'failed',
      provider: 'web-push',
      error: `web-push: refused to connect to 127.0.0.1: private or loopback address (set channels.allowPrivate or channels.allowList)`,
    });
    t.notOk(
      m.timeline.some((e: { e: string }) => e.e === 'deferred'),
      'not retried',
    );
    t.equal(gateway.connections(), 0, 'no connection reached the gateway');

    const allowed = await bootDaemon(t, { db, env: { POSTERN_CHANNELS_ALLOW_LIST: '127.0.0.1' } });
    const ws2 = await allowed.workspace('acme');
    await addVapid(allowed, caFile);
    t.match(await pushTo(allowed, ws2.live, `${gateway.url}/push/1`), { status: 'sent', providerMessageId: 'https://gw/m/1' });
    t.equal(gateway.requests.length, 1);
  });

  t.test(`a web-push endpoint on loopback written as IPv6 fails the same way (${db})`, async (t) => {
    const ca = makeTestCa();
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-push-ca-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const caFile = path.join(dir, 'ca.pem');
    writeFileSync(caFile, ca.cert);
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    await addVapid(d, caFile);
    for (const [endpoint, host] of [
      ['https://[::127.0.0.1]:8443/push/1', '::7f00:1'],
      ['https://[::ffff:0:127.0.0.1]/push/1', '::ffff:0:7f00:1'],
      ['https://[2002:7f00:1::1]/push/1', '2002:7f00:1::1'],
    ]) {
      const m = await pushTo(d, ws.live, endpoint);
      t.match(
        m,
        {
          status: 'failed',
          error: `web-push: refused to connect to ${host}: private or loopback address (set channels.allowPrivate or channels.allowList)`,
        },
        endpoint,
      );
    }
  });

  t.test(`a provider base URL on a private address is refused when the connection is added (${db})`, async (t) => {
    const add = (d: TestDaemon, baseUrl: string) =>
      d.cli(
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
        'AC1',
        '--auth-token',
        'secret',
        '--from',
        '+15005550006',
        '--base-url',
        baseUrl,
      );
    const d = await bootDaemon(t, { db });
    await d.workspace('acme');
    for (const url of [
      'http://127.0.0.1:8080',
      'http://10.1.2.3',
      'http://[::1]/',
      'http://localhost:9000',
      'http://[::10.1.2.3]/',
      'http://[2002:a01:203::]/',
      'http://[64:ff9b::10.1.2.3]/',
    ]) {
      const r = await add(d, url);
      t.equal(r.code, 1, url);
      t.match(JSON.parse(r.stderr).error, {
        code: 'invalid_body',
        issues: [{ path: 'baseUrl', message: /private or loopback address .*channels\.allowPrivate or channels\.allowList/ }],
      });
    }
    const allowed = await bootDaemon(t, { db, env: { POSTERN_CHANNELS_ALLOW_LIST: '10.0.0.0/8' } });
    await allowed.workspace('acme');
    t.equal((await add(allowed, 'http://10.1.2.3')).code, 0, 'an allow-listed gateway on the local network');
  });
}
