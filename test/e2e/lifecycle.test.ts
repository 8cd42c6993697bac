// The real binary: help, exit code 2 on bad config, first-start bootstrap, ready line, SIGTERM.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { databaseEnv, testDatabases } from '../helpers/databases.js';
import { readBootstrapKeys } from '../helpers/run-bin.js';
import { BIN, spawnDaemon } from '../helpers/spawn.js';

const run = promisify(execFile);

t.test('postern --help lists the commands', async (t) => {
  const { stdout } = await run(process.execPath, [BIN, '--help']);
  t.match(stdout, /serve/);
  t.match(stdout, /key create/);
});

t.test('an invalid setting exits 2 naming it', async (t) => {
  const err = await run(process.execPath, [BIN, 'serve'], { env: { ...process.env, POSTERN_HTTP_PORT: 'x' } }).catch((e) => e);
  t.equal(err.code, 2);
  t.match(err.stderr, /POSTERN_HTTP_PORT/);
});

for (const db of testDatabases()) {
  t.test(`first start bootstraps a workspace, prints ready, stops on SIGTERM (${db})`, async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-life-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = {
      ...(await databaseEnv(t, db)),
      POSTERN_DATA_DIR: dataDir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
    };
    // stderr is a pipe here, as under systemd or Docker: the keys go to a 0600 file, not the output.
    const d = await spawnDaemon(env);
    t.teardown(() => void d.child.kill('SIGKILL'));
    t.ok(d.http > 0 && d.smtp > 0, 'ready line carries both ports');
    t.notMatch(d.stderr.join('\n'), /sk_(live|test)_/, 'no key on stderr');
    t.notMatch(d.lines.join('\n'), /sk_(live|test)_/, 'no key in the structured log');
    const file = path.join(dataDir, 'bootstrap-keys.txt');
    t.equal(statSync(file).mode & 0o777, 0o600, 'the keys file is readable by its owner only');
    t.ok(
      d.lines.some((l) => l.includes(file)),
      'the log names the file',
    );
    const keys = readBootstrapKeys(dataDir);
    const res = await fetch(`http://127.0.0.1:${d.http}/v1/context`, { headers: { authorization: `Bearer ${keys.live}` } });
    t.match(await res.json(), { workspace: { slug: 'default', name: 'Default workspace' }, mode: 'live' });
    t.equal(res.status, 200);
    const test = await fetch(`http://127.0.0.1:${d.http}/v1/context`, { headers: { authorization: `Bearer ${keys.test}` } });
    t.match(await test.json(), { workspace: { slug: 'default' }, mode: 'test' });
    const list = await run(process.execPath, [BIN, 'workspace', 'list'], { env: { ...process.env, ...env } });
    t.equal(JSON.parse(list.stdout)[0].slug, 'default', 'the CLI works while the daemon runs');
    d.child.kill('SIGTERM');
    t.equal(await d.exited, 0);

    const written = readFileSync(file, 'utf8');
    const again = await spawnDaemon(env);
    t.teardown(() => void again.child.kill('SIGKILL'));
    t.equal((again.stderr.join('\n').match(/sk_(live|test)_/g) ?? []).length, 0, 'keys are printed once only');
    t.notOk(
      again.lines.some((l) => l.includes('bootstrap-keys.txt')),
      'no second bootstrap',
    );
    t.equal(readFileSync(file, 'utf8'), written, 'the keys file is not rewritten');
    again.child.kill('SIGINT');
    t.equal(await again.exited, 0);
  });
}
