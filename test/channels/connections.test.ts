import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createSecretBox, loadSecretsKey } from '../../src/lib/secret-box.js';
import { settingsFromFlags } from '../../src/cli/connections.js';
import { checkSettings } from '../../src/channels/provider.js';
import { providerFor } from '../../src/channels/registry.js';
import { writeFileSync } from 'node:fs';

t.test('secrets.key: generated once into the data dir, or taken from config', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-secrets-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = loadSecretsKey({ dataDir: dir, secrets: { key: '' } });
  const b = loadSecretsKey({ dataDir: dir, secrets: { key: '' } });
  t.equal(a.length, 32);
  t.same(a, b, 'the same key on the next start');
  t.equal(Buffer.from(readFileSync(path.join(dir, 'secrets.key'), 'utf8').trim(), 'base64').toString('hex'), a.toString('hex'));
  const hex = randomBytes(32).toString('hex');
  t.equal(loadSecretsKey({ dataDir: dir, secrets: { key: hex } }).toString('hex'), hex);
  const b64 = randomBytes(32).toString('base64');
  t.equal(loadSecretsKey({ dataDir: dir, secrets: { key: b64 } }).toString('base64'), b64);
});

t.test('the box: round trip, random IV, tamper and wrong key detected', async (t) => {
  const box = createSecretBox(randomBytes(32));
  const sealed = box.seal('{"authToken":"abc"}');
  t.match(sealed, /^v1:/);
  t.not(box.seal('{"authToken":"abc"}'), sealed, 'a fresh IV every time');
  t.equal(box.open(sealed), '{"authToken":"abc"}');
  const raw = Buffer.from(sealed.slice(3), 'base64');
  raw[raw.length - 1] ^= 1;
  t.throws(() => box.open('v1:' + raw.toString('base64')));
  t.throws(() => createSecretBox(randomBytes(32)).open(sealed));
});

t.test('provider settings: defaults, kinds and cross-field rules', async (t) => {
  const twilio = providerFor('sms', 'twilio')!;
  t.same(checkSettings(twilio, { accountSid: 'AC1', authToken: 'x', from: '+15005550006' }).values.baseUrl, 'https://api.twilio.com');
  t.match(checkSettings(twilio, { accountSid: 'AC1', authToken: 'x' }).issues, [{ path: 'from' }]);
  t.same(
    checkSettings(twilio, { accountSid: 'AC1' }).issues.map((i) => i.path),
    ['authToken', 'from'],
    'a cross-field rule is reported beside a missing setting, not after it is fixed',
  );
  t.same(
    checkSettings(providerFor('push', 'apns')!, { baseUrl: 'ftp://x' })
      .issues.map((i) => i.path)
      .filter((p) => p === 'baseUrl'),
    ['baseUrl'],
    'a setting its kind already refused is not refused again by the cross-field rule',
  );
  t.match(checkSettings(twilio, { accountSid: 'AC1', authToken: 'x', from: '+1 555' }).issues, [{ path: 'from', message: /E\.164/ }]);
  t.match(checkSettings(twilio, { accountSid: 'AC1', authToken: 'x', from: 'Acme', baseUrl: 'ftp://x' }).issues, [{ path: 'baseUrl' }]);
  const vapid = providerFor('web-push', 'vapid')!;
  t.match(checkSettings(vapid, { publicKey: 'p', privateKey: 'k', subject: 'ops@example.com', urgency: 'urgent' }).issues, [
    { path: 'urgency' },
    { path: 'subject' },
  ]);
  t.same(checkSettings(vapid, { publicKey: 'p', privateKey: 'k', subject: 'mailto:ops@example.com' }).values, {
    publicKey: 'p',
    privateKey: 'k',
    subject: 'mailto:ops@example.com',
    ttl: '86400',
    urgency: 'normal',
  });
});

t.test('CLI flags: kebab-case settings, files, a service-account JSON', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-flags-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const sa = path.join(dir, 'sa.json');
  writeFileSync(
    sa,
    JSON.stringify({
      type: 'service_account',
      project_id: 'demo',
      client_email: 'sa@demo.iam',
      private_key: 'PEM',
      private_key_id: 'kid',
      token_uri: 'https://oauth2.googleapis.com/token',
    }),
  );
  t.same(settingsFromFlags({ workspace: 'acme', env: 'live', channel: 'push', provider: 'fcm', 'service-account-file': sa }), {
    projectId: 'demo',
    clientEmail: 'sa@demo.iam',
    privateKey: 'PEM',
    privateKeyId: 'kid',
    tokenUrl: 'https://oauth2.googleapis.com/token',
  });
  const p8 = path.join(dir, 'AuthKey.p8');
  writeFileSync(p8, 'KEY');
  t.same(settingsFromFlags({ 'team-id': 'T', 'key-file': p8, 'base-url': 'https://x' }), { teamId: 'T', key: 'KEY', baseUrl: 'https://x' });
  t.throws(() => settingsFromFlags({ bogus: true }), /--bogus/);
  t.throws(() => settingsFromFlags({ 'key-file': path.join(dir, 'missing') }), /cannot read/);
});
