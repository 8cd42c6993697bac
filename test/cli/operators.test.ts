// `postern operator …` and `postern audit list` on the real binary (the password on standard
// input), and the setup link `serve` prints on a first start with no operator.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { databaseEnv, testDatabases } from '../helpers/databases.js';
import { runBin } from '../helpers/run-bin.js';
import { spawnDaemon } from '../helpers/spawn.js';

const base = { POSTERN_HTTP_HOST: '127.0.0.1', POSTERN_HTTP_PORT: '0', POSTERN_SMTP_HOST: '127.0.0.1', POSTERN_SMTP_PORT: '0' };

for (const db of testDatabases()) {
  t.test(`the first start prints a one-time setup link beside the keys; it makes the first owner (${db})`, async (t) => {
    const dataDir = t.testdir({});
    const env = { ...base, ...(await databaseEnv(t, db)), POSTERN_DATA_DIR: dataDir };
    const d = await spawnDaemon(env);
    t.teardown(() => void d.child.kill('SIGKILL'));
    const text = readFileSync(path.join(dataDir, 'bootstrap-keys.txt'), 'utf8');
    t.match(text, /live: sk_live_/);
    const link = /(http:\/\/127\.0\.0\.1:\d+\/dashboard\/setup\?token=[0-9A-Za-z]+)/.exec(text)?.[1];
    t.ok(link, `a setup link in the file: ${text}`);
    t.match(text, /within 1 hour/);
    t.notMatch(d.lines.join('\n'), /token=/, 'the link is not in the log');

    const token = new URL(link!).searchParams.get('token');
    const page = await fetch(link!);
    t.equal(page.status, 200, 'the link opens the dashboard');
    const made = await fetch(`http://127.0.0.1:${d.http}/dashboard/api/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, email: 'Owner@Example.com', password: 'a long enough password' }),
    });
    t.equal(made.status, 201);
    d.child.kill('SIGTERM');
    t.equal(await d.exited, 0);

    // A restart with an owner prints no link; the file of the first start is not rewritten.
    const again = await spawnDaemon(env);
    t.teardown(() => void again.child.kill('SIGKILL'));
    t.equal(readFileSync(path.join(dataDir, 'bootstrap-keys.txt'), 'utf8'), text);
    again.child.kill('SIGTERM');
    await again.exited;

    const list = await runBin(['operator', 'list'], { env });
    t.equal(list.code, 0, list.stderr);
    t.match(JSON.parse(list.stdout), [{ email: 'owner@example.com', role: 'owner', workspaces: [] }]);
    const audit = await runBin(['audit', 'list'], { env });
    t.match(JSON.parse(audit.stdout).data, [{ action: 'operator.setup', operator: { email: 'owner@example.com' }, ip: '127.0.0.1' }]);
  });

  t.test(`operator create, reset-password and remove; the password comes on standard input (${db})`, async (t) => {
    const dataDir = t.testdir({});
    const env = { ...base, ...(await databaseEnv(t, db)), POSTERN_DATA_DIR: dataDir };
    t.equal((await runBin(['migrate'], { env })).code, 0);
    t.equal((await runBin(['workspace', 'create', '--slug', 'acme', '--name', 'Acme'], { env })).code, 0);

    const noPassword = await runBin(['operator', 'create', '--email', 'first@example.com'], { env });
    t.equal(noPassword.code, 2);
    t.match(noPassword.stderr, /give the password on standard input/);

    const first = await runBin(['operator', 'create', '--email', 'first@example.com'], { env, input: 'first password 123\n' });
    t.equal(first.code, 0, first.stderr);
    t.match(JSON.parse(first.stdout), { email: 'first@example.com', role: 'owner' }, 'the first operator is an owner');
    t.notMatch(first.stdout, /first password/);

    const member = await runBin(['operator', 'create', '--email', 'm@example.com', '--workspace', 'acme'], {
      env,
      input: 'member password 1\n',
    });
    t.equal(member.code, 0, member.stderr);
    t.match(JSON.parse(member.stdout), { role: 'member', workspaces: [/^[0-9a-f-]{36}$/] });
    const dup = await runBin(['operator', 'create', '--email', 'M@example.com'], { env, input: 'member password 1\n' });
    t.equal(dup.code, 1);
    t.match(dup.stderr, /already exists/);
    const weak = await runBin(['operator', 'create', '--email', 'w@example.com'], { env, input: 'short\n' });
    t.not(weak.code, 0);
    t.match(weak.stderr, /at least 10 characters/);
    const unknownWs = await runBin(['operator', 'create', '--email', 'x@example.com', '--workspace', 'nope'], {
      env,
      input: 'xxxxxxxxxxxx\n',
    });
    t.match(unknownWs.stderr, /no workspace nope/);

    const lastOwner = await runBin(['operator', 'remove', '--email', 'first@example.com'], { env });
    t.not(lastOwner.code, 0);
    t.match(lastOwner.stderr, /last owner cannot be removed/);

    const reset = await runBin(['operator', 'reset-password', '--email', 'm@example.com'], { env, input: 'a new password 2\n' });
    t.equal(reset.code, 0, reset.stderr);
    const removed = await runBin(['operator', 'remove', '--email', 'm@example.com'], { env });
    t.equal(removed.code, 0, removed.stderr);
    const list = JSON.parse((await runBin(['operator', 'list'], { env })).stdout);
    t.same(
      list.map((o: any) => o.email),
      ['first@example.com'],
    );
    const audit = JSON.parse((await runBin(['audit', 'list', '--limit', '5'], { env })).stdout);
    t.same(
      audit.data.map((e: any) => `${e.action} ${e.target}`),
      ['operator.remove m@example.com', 'operator.reset-password m@example.com'],
    );
    t.equal((await runBin(['audit', 'list', '--limit', 'x'], { env })).code, 2);
  });

  t.test(`reset-password logs the operator out everywhere and the new password works (${db})`, async (t) => {
    const { bootDaemon } = await import('../helpers/daemon.js');
    const { dashboardLogin } = await import('../helpers/dashboard.js');
    const daemon = await bootDaemon(t, { db });
    await daemon.workspace('acme');
    const who = { email: 'owner@postern.test', password: 'the old password' };
    const client = await dashboardLogin(daemon, who);
    t.equal((await client.request('GET', '/dashboard/api/me')).status, 200);
    await daemon.app.operators.resetPassword(who.email, 'the new password');
    t.equal((await client.request('GET', '/dashboard/api/me')).status, 401, 'the session ended');
    const fresh = await dashboardLogin(daemon, { email: who.email, password: 'the new password' }, false);
    t.equal(fresh.me.operator.email, who.email);
  });

  t.test(`in a terminal the password is prompted for twice, without echo (${db})`, async (t) => {
    const { spawn } = await import('node:child_process');
    const { BIN } = await import('../helpers/spawn.js');
    const dataDir = t.testdir({});
    const env = { ...base, ...(await databaseEnv(t, db)), POSTERN_DATA_DIR: dataDir };
    t.equal((await runBin(['migrate'], { env })).code, 0);
    // script(1) runs the command on a pseudo-terminal, as an operator's shell would.
    const run = (answers: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn('script', ['-qec', `${process.execPath} ${BIN} operator create --email tty@example.com`, '/dev/null'], {
          env: { ...process.env, ...env },
        });
        let out = '';
        let asked = 0;
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const prompts = out.match(/Password( again)?: /g)?.length ?? 0;
          while (asked < prompts && asked < answers.length) child.stdin.write(`${answers[asked++]}\r`);
        });
        child.on('exit', (code) => resolve({ code, out }));
      });
    const differ = await run(['first password 1', 'second password 2']);
    t.equal(differ.code, 1);
    t.match(differ.out, /the two passwords differ; nothing was changed/);
    const ok = await run(['typed password 1', 'typed password 1']);
    t.equal(ok.code, 0, ok.out);
    t.match(ok.out, /Password: \s*Password again: /);
    t.notMatch(ok.out, /typed password/, 'the password is not echoed');
    t.match(ok.out, /"email": "tty@example.com"/);
  });
}
