// DKIM private keys are sealed at rest under secrets.key, like provider credentials: a new domain's
// key is stored sealed, one stored in clear by an earlier version is sealed at the next start, and
// signing opens it. `postern secrets rotate` (every daemon stopped) seals everything again under a
// new key, keeps the old key beside it, and a daemon restarted on the new key still signs and reads
// its credentials, while the old key opens nothing. The keys of DKIM rotations (the Ed25519 key
// that signs, those of a rotation waiting for its records) are sealed again with the rest.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { main } from '../../src/cli.js';
import { flag } from '../../src/db/schema.js';
import { createSecretBox, loadSecretsKey } from '../../src/lib/secret-box.js';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { setup } from '../helpers/inbound.js';
import { startSink } from '../helpers/smtp-sink.js';
const { authenticate } = (await import('mailauth')) as { authenticate: (raw: Buffer, opts: object) => Promise<any> };

async function cli(env: Record<string, string>, ...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await main(args, { ...env, POSTERN_LOG_LEVEL: 'silent' }, { out: (s) => (stdout += s), err: (s) => (stderr += s) });
  return { code, stdout, stderr };
}

for (const db of testDatabases()) {
  t.test(`DKIM keys sealed at rest and secrets.key rotated on ${db}`, async (t) => {
    const sink = await startSink(t);
    const env = await setup(t, { db, plan: 'pro', env: { POSTERN_DELIVERY_PORT: String(sink.port) } });
    const { dns, ws } = env;
    let d: TestDaemon = env.d;
    const daemonEnv = { POSTERN_DNS_SERVERS: dns.address, POSTERN_DNS_TIMEOUT: '500ms', POSTERN_DELIVERY_PORT: String(sink.port) };
    const restart = async () => {
      await d.stop();
      d = await bootDaemon(t, { dataDir: env.d.dataDir, databaseUrl: env.d.env.POSTERN_DATABASE_URL, env: daemonEnv });
    };
    dns.set('example.net', [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }]);
    dns.set('mx.example.net', [{ type: 'A', data: '127.0.0.1' }]);
    const signs = async (what: string) => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to: 'alice@example.net', channel: 'email', from: 'news@corp.example', content: { subject: 'Hello', text: 'Hi' } },
      });
      t.equal(r.status, 202, JSON.stringify(r.body));
      const before = sink.received.length;
      await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
      t.equal(sink.received.length, before + 1, `${what}: delivered`);
      const auth = await authenticate(sink.received.at(-1)!.raw, {
        ip: '127.0.0.1',
        helo: 'mx.postern.test',
        sender: 'x@bounces.mx.postern.test',
        resolver: d.app.dns.resolve,
      });
      t.match(auth.dkim.results[0], { signingDomain: 'corp.example', status: { result: 'pass' } }, `${what}: DKIM passes`);
    };
    const storedKey = async () =>
      (await d.app.db.selectFrom('domains').select('dkim_private_key').where('domain', '=', 'corp.example').executeTakeFirstOrThrow())
        .dkim_private_key!;

    // A sending domain: claimed, its DKIM record published and confirmed.
    dns.set('corp.example', [{ type: 'MX', data: { preference: 10, exchange: 'aspmx.l.google.com' } }]);
    const claim = await d.request('POST', '/v1/inbound/domains', {
      key: ws.live,
      body: { domain: 'corp.example', acknowledgeExistingMx: true },
    });
    t.equal(claim.status, 201);
    const dkim = claim.body.records.find((r: { check: string }) => r.check === 'dkim');
    dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
    d.clock.advance(60_000);
    t.match((await d.request('GET', `/v1/inbound/domains/${claim.body.id}`, { key: ws.live })).body, { sending: { verified: true } });

    const sealed = await storedKey();
    t.match(sealed, /^v1:/, 'the private key is stored sealed');
    t.notMatch(sealed, /PRIVATE KEY/, 'not in clear');
    await signs('sealed key');

    // A provider connection with a secret credential, sealed the same way.
    const connectionId = d.app.ids.uuid();
    await d.app.db
      .insertInto('provider_connections')
      .values({
        id: connectionId,
        workspace_id: ws.id,
        livemode: flag(true),
        channel: 'sms',
        provider: 'twilio',
        name: 'twilio live',
        settings: JSON.stringify({ accountSid: 'AC1', from: '+15005550006' }),
        secrets: d.app.box.seal(JSON.stringify({ authToken: 'tok-123' })),
        created_at: d.clock.now().toISOString(),
        deleted_at: null,
      })
      .execute();

    // A key stored in clear, as before keys were sealed: sealed at the next start, and it signs.
    const pem = d.app.box.open(sealed);
    await d.app.db.updateTable('domains').set({ dkim_private_key: pem }).where('domain', '=', 'corp.example').execute();
    await restart();
    t.match(await storedKey(), /^v1:/, 'a plain key left by an earlier version is sealed at start');
    t.equal(d.app.box.open(await storedKey()), pem, 'and opens to the same key');
    await signs('key sealed at start');

    // Rotation refuses while the daemon runs.
    const running = await cli(d.env, 'secrets', 'rotate');
    t.equal(running.code, 2, 'refused while the daemon runs');
    t.match(running.stderr, /in use by (a running Postern|1 running node).*stop every/);

    const oldKey = loadSecretsKey({ dataDir: d.dataDir, secrets: { key: '' } });
    await d.stop();
    const rotated = await cli(d.env, 'secrets', 'rotate');
    t.equal(rotated.code, 0, rotated.stderr);
    const out = JSON.parse(rotated.stdout);
    t.match(out, { connections: 1, dkimKeys: 1, key: path.join(d.dataDir, 'secrets.key'), oldKey: /secrets\.key\..+\.old$/ });
    t.equal(readFileSync(out.oldKey, 'utf8').trim(), oldKey.toString('base64'), 'the old key is kept beside the new one');
    t.notOk(
      readdirSync(d.dataDir).some((f) => f.endsWith('.new')),
      'no key left half-way',
    );
    const newKey = loadSecretsKey({ dataDir: d.dataDir, secrets: { key: '' } });
    t.notSame(newKey, oldKey, 'secrets.key is a new key');

    await restart();
    const resealed = await storedKey();
    t.throws(() => createSecretBox(oldKey).open(resealed), 'the old key no longer opens the DKIM key');
    const row = await d.app.db
      .selectFrom('provider_connections')
      .select('secrets')
      .where('id', '=', connectionId)
      .executeTakeFirstOrThrow();
    t.throws(() => createSecretBox(oldKey).open(row.secrets), 'nor the credentials');
    t.equal(createSecretBox(newKey).open(resealed), pem, 'the new key opens the same DKIM key');
    await signs('after rotation');
    t.match(await d.app.connections.resolve(connectionId), { credentials: { authToken: 'tok-123' } }, 'credentials read after rotation');

    // The keys of DKIM rotations (dkim-rotation.ts) are sealed too: the Ed25519 key that signs and
    // the keys of a rotation waiting for its records are sealed again with the rest.
    const domainPath = `/v1/inbound/domains/${claim.body.id}`;
    const publishNext = async () => {
      const view = (await d.request('GET', domainPath, { key: ws.live })).body;
      for (const k of view.dkim.keys.filter((k: { action: string }) => k.action === 'publish'))
        dns.set(k.name, [{ type: 'TXT', data: k.value }]);
      return (await d.request('GET', domainPath, { key: ws.live })).body;
    };
    t.equal((await d.request('POST', `${domainPath}/dkim/rotate`, { key: ws.live, body: {} })).status, 200);
    t.equal((await publishNext()).dkim.rotation, 'retiring', 'switched to an RSA and an Ed25519 key');
    t.equal((await d.request('POST', `${domainPath}/dkim/rotate`, { key: ws.live, body: {} })).status, 200);
    const sealedKeys = await d.app.db.selectFrom('dkim_keys').select('private_key').where('private_key', 'is not', null).execute();
    t.equal(sealedKeys.length, 2, 'the waiting rotation keeps its two keys, sealed');
    t.ok(sealedKeys.every((k) => /^v1:/.test(k.private_key!)));
    await d.stop();
    const again = await cli(d.env, 'secrets', 'rotate');
    t.equal(again.code, 0, again.stderr);
    t.match(JSON.parse(again.stdout), { dkimKeys: 4 }, 'the RSA and Ed25519 keys that sign, and the two waiting');
    await restart();
    t.equal((await publishNext()).dkim.rotation, 'retiring', 'the waiting keys, opened under the new secrets key, now sign');
    const r = await d.request('POST', '/v1/send-raw', {
      key: ws.live,
      body: { to: 'alice@example.net', channel: 'email', from: 'news@corp.example', content: { subject: 'Hello', text: 'Hi' } },
    });
    t.equal(r.status, 202);
    await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const auth = await authenticate(sink.received.at(-1)!.raw, {
      ip: '127.0.0.1',
      helo: 'mx.postern.test',
      sender: 'x@bounces.mx.postern.test',
      resolver: d.app.dns.resolve,
    });
    t.same(
      auth.dkim.results.map((x: { status: { result: string }; algo?: string }) => x.status.result),
      ['pass', 'pass'],
      'both signatures pass (mailauth)',
    );
  });
}
