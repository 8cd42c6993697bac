// `postern serve`: where the first start's API keys go (decided on an injected "stderr is a TTY"),
// and what the binary says when the machine cannot give it a port or a data directory.
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { createLogger } from '../../src/lib/logger.js';
import { announceBootstrapKeys, BOOTSTRAP_KEYS_FILE } from '../../src/main.js';
import { databaseEnv, testDatabases } from '../helpers/databases.js';
import { readBootstrapKeys, runBin } from '../helpers/run-bin.js';
import { spawnDaemon, type Spawned } from '../helpers/spawn.js';

const keys = { live: 'sk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', test: 'sk_test_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB' };

function capture() {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  let stderr = '';
  return { logs, log: createLogger('info', sink), stderr: () => stderr, writeStderr: (s: string) => void (stderr += s) };
}

t.test('on a terminal the keys are printed to stderr, and no file is written', async (t) => {
  const dataDir = t.testdir({});
  const c = capture();
  const file = announceBootstrapKeys(keys, { stderrIsTTY: true, dataDir, writeStderr: c.writeStderr, log: c.log });
  t.equal(file, null);
  t.match(c.stderr(), `live: ${keys.live}`);
  t.match(c.stderr(), `test: ${keys.test}`);
  t.match(c.stderr(), /postern key create --workspace default/, 'says how to recover lost keys');
  t.same(readdirSync(dataDir), []);
  t.notMatch(c.logs.join('\n'), /sk_(live|test)_/);
});

t.test('elsewhere the keys go to a 0600 file in the data dir, and the log names only the file', async (t) => {
  const dataDir = t.testdir({ [BOOTSTRAP_KEYS_FILE]: 'live: sk_live_stale\n' });
  const c = capture();
  const file = announceBootstrapKeys(keys, { stderrIsTTY: false, dataDir, writeStderr: c.writeStderr, log: c.log });
  t.equal(file, path.join(dataDir, BOOTSTRAP_KEYS_FILE));
  t.equal(c.stderr(), '', 'nothing on stderr');
  t.equal(statSync(file!).mode & 0o777, 0o600);
  const text = readFileSync(file!, 'utf8');
  t.match(text, `live: ${keys.live}`);
  t.match(text, `test: ${keys.test}`);
  t.notMatch(text, /sk_live_stale/, 'a file left from an earlier database is replaced');
  t.match(text, /postern key create/);
  const logged = c.logs.join('\n');
  t.notMatch(logged, /sk_(live|test)_/, 'no key in the log');
  t.match(JSON.parse(c.logs[0]), { level: 40, file });
  t.ok(existsSync(file!));
});

t.test('a file that cannot be written is logged with the way to recover, keys never printed', async (t) => {
  const dataDir = path.join(t.testdir({ plain: 'a file, not a directory' }), 'plain');
  const c = capture();
  t.equal(announceBootstrapKeys(keys, { stderrIsTTY: false, dataDir, writeStderr: c.writeStderr, log: c.log }), null);
  t.equal(c.stderr(), '');
  t.match(c.logs.join('\n'), /postern key create --workspace default/);
  t.notMatch(c.logs.join('\n'), /sk_(live|test)_/);
});

const base = {
  POSTERN_HTTP_HOST: '127.0.0.1',
  POSTERN_HTTP_PORT: '0',
  POSTERN_SMTP_HOST: '127.0.0.1',
  POSTERN_SMTP_PORT: '0',
  POSTERN_METRICS_PORT: '0',
};

/** Exactly one line on stderr, and no stack trace or key anywhere. */
function oneLine(t: Test, r: { stdout: string; stderr: string }): string {
  const lines = r.stderr.trim().split('\n');
  t.equal(lines.length, 1, `one line on stderr: ${r.stderr}`);
  t.notMatch(r.stderr + r.stdout, /\n\s+at |sk_(live|test)_/, 'no stack trace, no key');
  return lines[0];
}

for (const db of testDatabases()) {
  t.test(`a port in use: one line naming it, exit 2, and nothing bootstrapped until a start succeeds (${db})`, async (t) => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    t.teardown(() => blocker.close());
    const port = (blocker.address() as net.AddressInfo).port;
    const dataDir = t.testdir({});
    const dbEnv = await databaseEnv(t, db);
    for (const [listener, variable] of [
      ['HTTP', 'POSTERN_HTTP_PORT'],
      ['SMTP', 'POSTERN_SMTP_PORT'],
      ['METRICS', 'POSTERN_METRICS_PORT'],
    ]) {
      const r = await runBin(['serve'], { env: { ...base, ...dbEnv, POSTERN_DATA_DIR: dataDir, [variable]: String(port) } });
      t.equal(r.code, 2, listener);
      const line = oneLine(t, r);
      t.match(line, `postern: cannot listen for ${listener} on 127.0.0.1:${port}`);
      t.match(line, variable);
      t.match(line, /already in use/);
      t.notOk(existsSync(path.join(dataDir, BOOTSTRAP_KEYS_FILE)), 'no keys were made');
    }
    // The restart that works is the first start: it makes the keys, and they work.
    const d = await spawnDaemon({ ...base, ...dbEnv, POSTERN_DATA_DIR: dataDir });
    t.teardown(() => void d.child.kill('SIGKILL'));
    const { live } = readBootstrapKeys(dataDir);
    const res = await fetch(`http://127.0.0.1:${d.http}/v1/context`, { headers: { authorization: `Bearer ${live}` } });
    t.equal(res.status, 200);
    // The ready line names the metrics listener's port too, and it serves there.
    t.ok(typeof d.metrics === 'number' && d.metrics !== d.http, 'metrics port in the ready line');
    t.match(await (await fetch(`http://127.0.0.1:${d.metrics}/metrics`)).text(), /^# HELP /m);
    d.child.kill('SIGTERM');
    t.equal(await d.exited, 0);
  });
}

t.test('a data directory that cannot be written: one line naming it, exit 2, nothing made', async (t) => {
  const dir = t.testdir({ file: 'not a directory' });
  const under = path.join(dir, 'file', 'data');
  const r = await runBin(['serve'], { env: { ...base, POSTERN_DATA_DIR: under } });
  t.equal(r.code, 2);
  t.match(oneLine(t, r), `postern: cannot keep data in ${under} (dataDir, POSTERN_DATA_DIR): part of the path is a file`);

  // Read-only for the user running Postern (root writes anywhere, so the child runs as nobody then).
  const ro = path.join(dir, 'ro');
  mkdirSync(ro);
  chmodSync(dir, 0o755);
  chmodSync(ro, 0o555);
  const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const denied = await runBin(['serve'], { env: { ...base, POSTERN_DATA_DIR: ro }, ...asNobody });
  t.equal(denied.code, 2);
  t.match(oneLine(t, denied), `postern: cannot keep data in ${ro} (dataDir, POSTERN_DATA_DIR): permission denied`);
  t.same(readdirSync(ro), [], 'nothing was created');
});

// As the image's user meets a host directory mounted on /data: before, the same line without the
// owner and the fix. It needs two users: root makes the directories, the daemon runs as nobody.
const notRoot = process.getuid?.() !== 0 && 'needs root, to run the daemon as another user than the directory owner';
t.test(
  'a data directory of another user (a bind-mounted /data): whose it is, who Postern is, and the fix',
  { skip: notRoot },
  async (t) => {
    const nobody = { uid: 65534, gid: 65534 };
    const dir = t.testdir({});
    chmodSync(dir, 0o755);
    const rootOwned = path.join(dir, 'root-owned');
    mkdirSync(rootOwned, { mode: 0o755 });
    const r = await runBin(['serve'], { env: { ...base, POSTERN_DATA_DIR: rootOwned }, ...nobody });
    t.equal(r.code, 2, 'a setting to fix: exit 2');
    t.equal(
      oneLine(t, r),
      `postern: cannot keep data in ${rootOwned} (dataDir, POSTERN_DATA_DIR): permission denied to the user running Postern ` +
        `(uid 65534; ${rootOwned} is owned by uid 0): give it to Postern, chown 65534:65534 ${rootOwned}`,
    );

    // Owned by a user of the host (uid 1000): running as that user is the other way out.
    const hostOwned = path.join(dir, 'host-owned');
    mkdirSync(hostOwned, { mode: 0o755 });
    chownSync(hostOwned, 1000, 1000);
    const other = await runBin(['serve'], { env: { ...base, POSTERN_DATA_DIR: hostOwned }, ...nobody });
    t.equal(other.code, 2);
    t.match(
      oneLine(t, other),
      `(uid 65534; ${hostOwned} is owned by uid 1000): give it to Postern, chown 65534:65534 ${hostOwned}, or run Postern as its owner (docker run --user 1000:1000)`,
    );

    // Not there yet, in a parent Postern may not write: make it, rather than give the parent away.
    const missing = path.join(rootOwned, 'data');
    const made = await runBin(['serve'], { env: { ...base, POSTERN_DATA_DIR: missing }, ...nobody });
    t.equal(made.code, 2);
    t.match(
      oneLine(t, made),
      `(uid 65534; ${rootOwned} is owned by uid 0): make it for Postern, mkdir -p ${missing} && chown 65534:65534 ${missing}`,
    );
    t.same(readdirSync(rootOwned), [], 'nothing was created');
    t.same(readdirSync(hostOwned), [], 'nothing was created');
  },
);

t.test('a purge schedule that is not a cron expression is a setting to fix, before anything opens', async (t) => {
  // Before, the daemon started, created its database, opened its listeners and then crashed with
  // node-cron's stack trace.
  const dataDir = t.testdir({});
  const r = await runBin(['serve'], { env: { ...base, POSTERN_DATA_DIR: dataDir, POSTERN_INBOUND_PURGE_CRON: '17 3 * *' } });
  t.equal(r.code, 2);
  t.match(
    oneLine(t, r),
    'postern: invalid setting inbound.purgeCron (POSTERN_INBOUND_PURGE_CRON): not a cron expression: expected 5 or 6 fields but got 4',
  );
  t.same(readdirSync(dataDir), [], 'nothing was created');
});

t.test('http.trustProxy true stops the start with the forms that replace it', async (t) => {
  // Before, true was taken: Express then believed the left-most X-Forwarded-For address, which
  // the client writes, so the login throttle and the audit log saw whatever it claimed.
  const dataDir = t.testdir({});
  const r = await runBin(['serve'], { env: { ...base, POSTERN_DATA_DIR: dataDir, POSTERN_HTTP_TRUST_PROXY: 'true' } });
  t.equal(r.code, 2);
  t.match(
    oneLine(t, r),
    /^postern: invalid setting http\.trustProxy \(POSTERN_HTTP_TRUST_PROXY\): true believes every X-Forwarded-For address a client writes and is refused: give the number of proxies in front of Postern \(1 for one Caddy or nginx\), or their addresses and CIDR ranges/,
  );
  t.same(readdirSync(dataDir), [], 'nothing was created');
});

t.test('the daemon and the CLI say so when a named config file is missing', async (t) => {
  const dataDir = t.testdir({});
  for (const [argv, env, source] of [
    [['serve', '--config', '/nonexistent/postern.json'], {}, '--config'],
    [['serve'], { POSTERN_CONFIG: '/nonexistent/postern.json' }, 'POSTERN_CONFIG'],
    [['workspace', 'list', '--config', '/nonexistent/postern.json'], {}, '--config'],
  ] as const) {
    const r = await runBin([...argv], { env: { ...base, POSTERN_DATA_DIR: dataDir, ...env } });
    t.equal(r.code, 2, argv.join(' '));
    t.match(oneLine(t, r), `cannot read config file /nonexistent/postern.json (${source}): it does not exist`);
  }
  t.same(readdirSync(dataDir), []);
});

t.test('an unknown POSTERN_* variable is one warning line naming it and the closest setting', async (t) => {
  const r = await runBin(['workspace', 'list'], { env: { ...base, POSTERN_DATA_DIR: t.testdir({}), POSTERN_HTTP_PROT: '9000' } });
  t.match(r.stderr, 'postern: warning: POSTERN_HTTP_PROT names no setting and is ignored; did you mean POSTERN_HTTP_PORT?\n');
});

/** The first log line the daemon wrote (or writes next) that `match` accepts. */
function lineMatching(d: Spawned, match: (line: { level: number; msg: string }) => boolean): Promise<unknown> {
  const find = () => d.lines.map((l) => JSON.parse(l) as { level: number; msg: string }).find(match);
  return new Promise((resolve) => {
    const found = find();
    if (found) return resolve(found);
    // readline, listening first, has pushed the chunk's lines by the time this listener runs.
    const onData = () => {
      const line = find();
      if (!line) return;
      d.child.stdout!.off('data', onData);
      resolve(line);
    };
    d.child.stdout!.on('data', onData);
  });
}

t.test('listening on every address, the public URL is hostname, never 0.0.0.0, with a warning to set it', async (t) => {
  const dataDir = t.testdir({});
  const d = await spawnDaemon({ ...base, POSTERN_DATA_DIR: dataDir, POSTERN_HTTP_HOST: '0.0.0.0' });
  t.teardown(() => void d.child.kill('SIGKILL'));
  const ready = JSON.parse(d.lines.find((l) => l.includes('"msg":"ready"'))!);
  t.equal(ready.publicUrl, `http://localhost:${d.http}`);
  const warning = await lineMatching(d, (l) => l.level === 40 && /publicUrl/.test(l.msg));
  t.match(warning, { msg: /publicUrl is empty.*http:\/\/localhost:\d+.*only this machine can reach/ });
  d.child.kill('SIGTERM');
  t.equal(await d.exited, 0);

  const named = await spawnDaemon({ ...base, POSTERN_DATA_DIR: dataDir, POSTERN_HTTP_HOST: '0.0.0.0', POSTERN_HOSTNAME: 'mx.example.com' });
  t.teardown(() => void named.child.kill('SIGKILL'));
  t.match(named.lines.join('\n'), `"publicUrl":"http://mx.example.com:${named.http}"`);
  t.notMatch(named.lines.join('\n'), /publicUrl is empty/);
  named.child.kill('SIGTERM');
  t.equal(await named.exited, 0);
});
