// The real binary: help, exit code 2 on bad config, first-start bootstrap, ready line, SIGTERM.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
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

t.test('first start bootstraps a workspace, prints ready, stops on SIGTERM', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-life-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { POSTERN_DATA_DIR: dataDir, POSTERN_HTTP_PORT: '0', POSTERN_SMTP_PORT: '0', POSTERN_SMTP_HOST: '127.0.0.1' };
  const d = await spawnDaemon(env);
  t.ok(d.http > 0 && d.smtp > 0, 'ready line carries both ports');
  const keys = d.stderr.join('\n').match(/sk_(live|test)_[0-9A-Za-z]+/g) ?? [];
  t.equal(keys.length, 2, 'one live and one test key printed');
  t.notMatch(d.lines.join('\n'), /sk_(live|test)_/, 'the keys are not in the structured log');
  const live = keys.find((k) => k.startsWith('sk_live_'))!;
  const res = await fetch(`http://127.0.0.1:${d.http}/v1/context`, { headers: { authorization: `Bearer ${live}` } });
  t.match(await res.json(), { workspace: { slug: 'default', name: 'Default workspace' }, mode: 'live' });
  t.equal(res.status, 200);
  const list = await run(process.execPath, [BIN, 'workspace', 'list'], { env: { ...process.env, ...env } });
  t.equal(JSON.parse(list.stdout)[0].slug, 'default', 'the CLI works while the daemon runs');
  d.child.kill('SIGTERM');
  t.equal(await d.exited, 0);

  const again = await spawnDaemon(env);
  t.equal((again.stderr.join('\n').match(/sk_(live|test)_/g) ?? []).length, 0, 'keys are printed once only');
  again.child.kill('SIGINT');
  t.equal(await again.exited, 0);
});
