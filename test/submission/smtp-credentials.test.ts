// SMTP credentials end to end, on both databases: made through /v1/smtp-credentials (send scope;
// others get 403, bad bodies 422), listed without their secrets, kept as a SHA-256 only (the table
// is read), and used by real clients (Python's smtplib and swaks, STARTTLS on the submission port)
// as AUTH's user name and password. A live credential submits live messages, a test one test-mode
// messages; last use moves at most once a minute; a revoked credential gets 535 and an audit entry
// like a revoked key; the secret appears in no listing and no log line, and is no bearer token. A
// credential has an `api-send` budget of its own, as one more send-scoped key would.
import { createHash } from 'node:crypto';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { addVerifiedDomain, startRemoteMx } from '../helpers/smtp-sink.js';
import { compose, smtplib, swaks, type Submitted } from '../helpers/submission-clients.js';
import { until } from '../helpers/until.js';

interface Credential {
  id: string;
  username: string;
  env: string;
  livemode: boolean;
  description: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  secret?: string;
}

async function messagesOf(d: TestDaemon, key: string, client: string) {
  const r = await d.request('GET', `/v1/messages?limit=200&metadata[client]=${client}`, { key });
  return r.body.data as { publicId: string; recipient: string; livemode: boolean }[];
}

for (const db of testDatabases()) {
  t.test(`SMTP credentials on ${db}`, async (t) => {
    const mx = await startRemoteMx(t, { domains: ['example.net'] });
    const d = await bootDaemon(t, { db, env: { ...mx.env, POSTERN_SUBMISSION_ENABLED: 'true' } });
    const acme = await d.workspace('acme', { plan: 'pro' });
    mx.dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: await addVerifiedDomain(d.app, acme.id, 'acme.example') }]);
    const port = d.submissionPort!;
    const readKey = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read')).json.secret as string;
    const sendKey = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'send')).json.secret as string;

    const submission = async (client: string, user: string, password: string): Promise<Submitted> => ({
      user,
      password,
      from: 'app@acme.example',
      to: [`one.${client}@example.net`],
      raw: await compose({
        from: 'app@acme.example',
        to: `one.${client}@example.net`,
        subject: `From ${client}`,
        text: 'hello',
        headers: { 'X-Postern-Metadata': JSON.stringify({ client }) },
      }),
    });
    const listed = async (key: string) => {
      const r = await d.request('GET', '/v1/smtp-credentials', { key });
      t.equal(r.status, 200);
      return r.body.data as Credential[];
    };

    const made = await d.request('POST', '/v1/smtp-credentials', { key: sendKey, body: { description: 'gitea' } });
    t.equal(made.status, 201, 'a send-scoped key creates a credential');
    const live = made.body as Credential & { secret: string };
    t.match(live, {
      id: /^smc_[0-9A-Za-z]{22}$/,
      username: /^smtp_[a-z0-9]{20}$/,
      env: 'live',
      livemode: true,
      description: 'gitea',
      lastUsedAt: null,
      revokedAt: null,
      secret: /^sp_live_[0-9A-Za-z]{20,}$/,
    });

    t.test('only a key that may send makes credentials; bad input is a 4xx in the envelope', async (t) => {
      const scoped = await d.request('POST', '/v1/smtp-credentials', { key: readKey, body: {} });
      t.equal(scoped.status, 403);
      t.match(scoped.body, { error: { code: 'insufficient_scope', scope: 'send' } });
      t.equal((await d.request('GET', '/v1/smtp-credentials', { key: readKey })).status, 403, 'nor lists them');
      const long = await d.request('POST', '/v1/smtp-credentials', { key: sendKey, body: { description: 'x'.repeat(201) } });
      t.equal(long.status, 422);
      t.match(long.body, { error: { code: 'invalid_body', issues: [{ path: 'description' }] } });
      const unknown = await d.request('POST', '/v1/smtp-credentials', { key: sendKey, body: { env: 'test' } });
      t.equal(unknown.status, 422, 'the environment is the key\u2019s, not a field');
      const control = await d.request('POST', '/v1/smtp-credentials', { key: sendKey, body: { description: 'a\u0000b' } });
      t.equal(control.status, 422, 'no control characters');
      const notJson = await d.request('POST', '/v1/smtp-credentials', {
        key: sendKey,
        rawBody: '{',
        headers: { 'content-type': 'application/json' },
      });
      t.equal(notJson.status, 400);
      t.match(notJson.body, { error: { code: 'invalid_request' } });
      const missing = await d.request('DELETE', '/v1/smtp-credentials/smc_nothere', { key: sendKey });
      t.equal(missing.status, 404);
      t.match(missing.body, { error: { code: 'not_found' } });
      const escape = await d.request('DELETE', '/v1/smtp-credentials/%ZZ', { key: sendKey });
      t.equal(escape.status, 400, 'a malformed escape in the id: 400');
      t.match(escape.body, { error: { code: 'invalid_request' } });
    });

    t.test('listed without the secret; only its SHA-256 is stored', async (t) => {
      const list = await listed(acme.live);
      const mine = list.find((c) => c.id === live.id);
      t.ok(mine, 'the credential is listed');
      t.notOk('secret' in mine!, 'no secret field');
      t.notOk(JSON.stringify(list).includes(live.secret), 'the secret is nowhere in the list');
      t.same(await listed(acme.test), [], 'a test key sees no live credential');
      const row = await d.app.db.selectFrom('smtp_credentials').selectAll().where('id', '=', live.id).executeTakeFirstOrThrow();
      t.equal(row.secret_hash, createHash('sha256').update(live.secret).digest('hex'), 'the hash is the SHA-256 of the secret');
      t.notOk(
        Object.values(row).some((v) => typeof v === 'string' && v.includes(live.secret.slice(8))),
        'no column holds the secret',
      );
    });

    t.test('a live credential authenticates over STARTTLS and submits live messages', async (t) => {
      const py = await smtplib(port, await submission('cred-live', live.username, live.secret), { tls: 'starttls' });
      t.match(py.login, [235], 'AUTH accepted');
      t.match(py.data, [250, /^2\.0\.0 Ok: queued as msg_\w+$/]);
      const sw = await swaks(port, await submission('cred-swaks', live.username, live.secret), { tls: 'starttls', auth: 'LOGIN' });
      t.equal(sw.code, 0, `swaks succeeded: ${sw.stderr}${sw.stdout.slice(-800)}`);
      t.match(sw.stdout, /<~ {2}250 2\.0\.0 Ok: queued as msg_\w+/);
      for (const client of ['cred-live', 'cred-swaks']) {
        const list = await messagesOf(d, acme.live, client);
        t.equal(list.length, 1, `${client}: one message`);
        t.equal(list[0]?.livemode, true, `${client}: live`);
      }
    });

    t.test('last use is kept to the minute', async (t) => {
      const first = (await listed(acme.live)).find((c) => c.id === live.id)!;
      t.equal(first.lastUsedAt, d.clock.now().toISOString(), 'set by the AUTH');
      d.clock.advance(30_000);
      t.match((await smtplib(port, await submission('cred-30s', live.username, live.secret), { tls: 'starttls' })).login, [235]);
      t.equal((await listed(acme.live)).find((c) => c.id === live.id)!.lastUsedAt, first.lastUsedAt, 'not written again within the minute');
      d.clock.advance(31_000);
      t.match((await smtplib(port, await submission('cred-61s', live.username, live.secret), { tls: 'starttls' })).login, [235]);
      t.equal((await listed(acme.live)).find((c) => c.id === live.id)!.lastUsedAt, d.clock.now().toISOString(), 'moved after a minute');
    });

    t.test('a test credential submits test-mode messages that reach no MX', async (t) => {
      const r = await d.request('POST', '/v1/smtp-credentials', { key: acme.test, body: {} });
      t.equal(r.status, 201);
      const test = r.body as Credential & { secret: string };
      t.match(test, { env: 'test', livemode: false, secret: /^sp_test_/, description: '' });
      const py = await smtplib(port, await submission('cred-test', test.username, test.secret), { tls: 'starttls' });
      t.match(py.data, [250]);
      const list = await until('the test-mode message', async () => {
        const l = await messagesOf(d, acme.test, 'cred-test');
        return l.length === 1 && l;
      });
      t.equal(list[0].livemode, false, 'test mode');
      t.equal((await messagesOf(d, acme.live, 'cred-test')).length, 0, 'not among live messages');
      t.same(
        (await listed(acme.test)).map((c) => c.id),
        [test.id],
        'a test key lists test credentials only',
      );
      t.equal(mx.sink.received.filter((m) => m.raw.toString().includes('From cred-test')).length, 0, 'nothing reached the MX');
    });

    t.test('a credential is no API key: its secret as a bearer token is a 401', async (t) => {
      const r = await d.request('GET', '/v1/context', { key: live.secret });
      t.equal(r.status, 401);
      t.match(r.body, { error: { code: 'unauthorized' } });
    });

    t.test('a secret goes with its own user name only', async (t) => {
      const asKey = await smtplib(port, await submission('cred-apikey', 'apikey', live.secret), { tls: 'starttls', mechanism: 'PLAIN' });
      t.match(asKey.login, [535, /own user name/], 'the secret with apikey: 535');
      const keyAsCred = await smtplib(port, await submission('cred-keypw', live.username, acme.live), {
        tls: 'starttls',
        mechanism: 'PLAIN',
      });
      t.match(keyAsCred.login, [535, /invalid or revoked SMTP credential/], "an API key with a credential's user name: 535");
    });

    t.test('a revoked credential fails AUTH with 535, in the audit log', async (t) => {
      const other = await d.request('DELETE', `/v1/smtp-credentials/${live.id}`, { key: acme.test });
      t.equal(other.status, 404, 'a test key cannot revoke a live credential');
      const r = await d.request('DELETE', `/v1/smtp-credentials/${live.id}`, { key: sendKey });
      t.equal(r.status, 200);
      t.match(r.body, { id: live.id, revokedAt: d.clock.now().toISOString() });
      t.notOk('secret' in r.body);
      const again = await d.request('DELETE', `/v1/smtp-credentials/${live.id}`, { key: sendKey });
      t.equal(again.body.revokedAt, r.body.revokedAt, 'revoking again changes nothing');
      const py = await smtplib(port, await submission('cred-revoked', live.username, live.secret), { tls: 'starttls', mechanism: 'PLAIN' });
      t.match(py.login, [535, /5\.7\.8 authentication failed: invalid or revoked SMTP credential/]);
      t.equal(py.mail, null, 'never got to MAIL');
      t.equal((await messagesOf(d, acme.live, 'cred-revoked')).length, 0, 'nothing stored');
      const audit = await d.app.audit.list({ operator: live.username });
      // Newest first: the revoked credential's failure, then the API key given as its password.
      t.same(
        audit.data.filter((e) => e.action === 'smtp.auth').map((e) => [e.outcome, e.ip]),
        [
          ['failed: invalid or revoked SMTP credential', '127.0.0.1'],
          ['failed: invalid or revoked SMTP credential', '127.0.0.1'],
        ],
        'each failure is audited under the user name',
      );
    });

    t.test('the secrets are in no log line', async (t) => {
      t.ok(d.logs.length > 0, 'the daemon logged (debug level)');
      const all = d.logs.join('\n');
      t.notOk(all.includes(live.secret), 'the live secret is not logged');
      t.notOk(all.includes(live.secret.slice(8)), 'nor its random part');
    });
  });

  t.test(`a credential has a send budget of its own, as a key does (${db})`, async (t) => {
    // One send a second, on the daemon's manual clock: nothing refills until the test moves it.
    const d = await bootDaemon(t, { db, env: { POSTERN_SUBMISSION_ENABLED: 'true', POSTERN_RATE_LIMIT_SEND: '1' } });
    const acme = await d.workspace('acme', { plan: 'pro' });
    await addVerifiedDomain(d.app, acme.id, 'acme.example');
    const one = (await d.app.smtpCredentials.create({ id: acme.id }, { env: 'test' })) as { credential: Credential; secret: string };
    const two = (await d.app.smtpCredentials.create({ id: acme.id }, { env: 'test' })) as { credential: Credential; secret: string };
    const send = async (c: { credential: Credential; secret: string }, client: string) =>
      smtplib(
        d.submissionPort!,
        {
          user: c.credential.username,
          password: c.secret,
          from: 'app@acme.example',
          to: [`one.${client}@example.net`],
          raw: await compose({ from: 'app@acme.example', to: `one.${client}@example.net`, subject: client, text: 'hello' }),
        },
        { tls: 'starttls' },
      );
    t.match((await send(one, 'first')).data, [250], 'the first transaction goes through');
    t.match((await send(one, 'second')).mail, [451, /4\.7\.0 the key's send rate limit is exceeded, try again in 1 s/], 'the second waits');
    t.match((await send(two, 'other')).data, [250], 'another credential has its own budget');
    const api = await d.request('POST', '/v1/send-raw', {
      key: acme.test,
      body: { to: 'api@example.net', from: 'app@acme.example', channel: 'email', content: { subject: 'api', text: 'hello' } },
    });
    t.equal(api.status, 202, "and so has the workspace's API key");
    d.clock.advance(1000);
    t.match((await send(one, 'third')).data, [250], 'a second later, it has room again');
  });
}
