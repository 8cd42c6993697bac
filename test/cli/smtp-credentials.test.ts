// `postern smtp-credential create | list | revoke`: JSON out, the secret printed by create alone,
// what the CLI makes is what AUTH on the submission port takes (Python's smtplib over STARTTLS),
// and what it revokes fails AUTH with 535 at once. Usage mistakes exit 2, bad input 1 with the
// error envelope on stderr.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { compose, smtplib } from '../helpers/submission-clients.js';

for (const db of testDatabases()) {
  t.test(`postern smtp-credential … (${db})`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_SUBMISSION_ENABLED: 'true' } });
    await d.workspace('acme');
    const login = async (user: string, password: string) =>
      (
        await smtplib(
          d.submissionPort!,
          { user, password, from: 'app@acme.example', to: ['one@example.net'], raw: await compose({ subject: 'x', text: 'x' }) },
          { tls: 'starttls', mechanism: 'PLAIN' },
        )
      ).login;

    const created = await d.cli('smtp-credential', 'create', '--workspace', 'acme', '--description', 'cron on build01');
    t.equal(created.code, 0, created.stderr);
    t.match(created.json, {
      id: /^smc_/,
      username: /^smtp_[a-z0-9]{20}$/,
      env: 'live',
      livemode: true,
      description: 'cron on build01',
      secret: /^sp_live_/,
      lastUsedAt: null,
      revokedAt: null,
    });
    const { id, username, secret } = created.json as { id: string; username: string; secret: string };

    const test = await d.cli('smtp-credential', 'create', '--workspace', 'acme', '--env', 'test');
    t.match(test.json, { env: 'test', livemode: false, secret: /^sp_test_/, description: '' });

    const list = await d.cli('smtp-credential', 'list', '--workspace', 'acme');
    t.equal(list.code, 0);
    t.same(
      list.json.map((c: { id: string }) => c.id),
      [test.json.id, id],
      'newest first, both environments',
    );
    t.notMatch(list.stdout, /sp_(live|test)_/, 'no secret in the list');
    t.notOk(list.stdout.includes(secret.slice(8)), 'not even its random part');
    t.same(
      (await d.cli('smtp-credential', 'list', '--workspace', 'acme', '--env', 'test')).json.map((c: { id: string }) => c.id),
      [test.json.id],
      '--env test: the test one alone',
    );

    t.match(await login(username, secret), [235], 'AUTH takes what the CLI made');
    const used = (await d.cli('smtp-credential', 'list', '--workspace', 'acme', '--env', 'live')).json[0];
    t.equal(used.lastUsedAt, d.clock.now().toISOString(), 'last use is listed');

    const revoked = await d.cli('smtp-credential', 'revoke', id);
    t.equal(revoked.code, 0, revoked.stderr);
    t.match(revoked.json, { id, username, revoked: true, revokedAt: /^\d{4}-\d\d-\d\dT/ });
    t.match(await login(username, secret), [535], 'a revoked credential fails AUTH');
    t.equal((await d.cli('smtp-credential', 'list', '--workspace', 'acme', '--env', 'live')).json[0].revokedAt, revoked.json.revokedAt);

    const usage = await d.cli('smtp-credential', 'revoke');
    t.equal(usage.code, 2, 'no id: usage error');
    t.match(usage.stderr, /usage: postern smtp-credential revoke ID/);
    t.equal((await d.cli('smtp-credential', 'create')).code, 2, 'no --workspace: usage error');
    t.equal((await d.cli('smtp-credential', 'list', '--workspace', 'acme', '--env', 'staging')).code, 2, 'unknown --env in list');
    const badEnv = await d.cli('smtp-credential', 'create', '--workspace', 'acme', '--env', 'staging');
    t.equal(badEnv.code, 1);
    t.match(JSON.parse(badEnv.stderr), { error: { code: 'invalid_body', issues: [{ path: 'env' }] } });
    const missing = await d.cli('smtp-credential', 'revoke', 'smc_nothere');
    t.equal(missing.code, 1);
    t.match(JSON.parse(missing.stderr), { error: { code: 'not_found' } });
    t.equal((await d.cli('smtp-credential', 'create', '--workspace', 'nope')).code, 1, 'unknown workspace');

    const help = await d.cli('smtp-credential', '--help');
    t.equal(help.code, 0);
    t.match(help.stdout, /postern smtp-credential create --workspace S \[--env live\|test\] \[--description D\]/);
    t.match(help.stdout, /postern smtp-credential list/);
    t.match(help.stdout, /postern smtp-credential revoke ID/);
  });
}
