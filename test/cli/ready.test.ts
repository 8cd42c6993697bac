// `postern ready` waits for the daemon's /readyz the way systemd's ExecStartPost uses it: exit 0
// once the daemon can serve (also when it starts after the command), exit 1 with the daemon's own
// reasons or the connection error when the wait runs out. And the shipped unit uses it and passes
// systemd's own checker.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { runBin } from '../helpers/run-bin.js';
import { freePort } from '../helpers/ports.js';
import { spawnDaemon } from '../helpers/spawn.js';
import { sqliteOnly } from '../helpers/databases.js';

sqliteOnly('`postern ready` polls /readyz over HTTP; what the database adds to readiness runs on both in test/http/readiness.test.ts');

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const UNIT = path.join(ROOT, 'systemd', 'postern.service');

t.test('a running daemon is ready at once', async (t) => {
  const d = await bootDaemon(t);
  const r = await runBin(['ready', '--url', d.url, '--wait', '5s']);
  t.equal(r.code, 0, r.stderr);
  const body = JSON.parse(r.stdout);
  t.equal(body.ready, true);
  t.same(body.reasons, []);
});

t.test('it waits for a daemon that starts after it, at the configured address', async (t) => {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-ready-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { POSTERN_HTTP_HOST: '127.0.0.1', POSTERN_HTTP_PORT: String(port), POSTERN_DATA_DIR: dataDir, POSTERN_LOG_LEVEL: 'warn' };
  // Until the command has asked and been turned away, the port belongs to a listener that hangs
  // up on it: the daemon starts only after the command has seen it is not there.
  const bouncer = createNetServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => bouncer.listen(port, '127.0.0.1', resolve));
  const asked = new Promise<void>((resolve) => bouncer.once('connection', () => resolve()));
  const waiting = runBin(['ready', '--wait', '60s'], { env });
  await asked;
  await new Promise<void>((resolve) => bouncer.close(() => resolve()));
  const daemon = await spawnDaemon({ ...env, POSTERN_SMTP_PORT: '0', POSTERN_SMTP_HOST: '127.0.0.1', POSTERN_HOSTNAME: 'mx.postern.test' });
  t.teardown(async () => {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  });
  const r = await waiting;
  t.equal(r.code, 0, r.stderr);
  t.equal(JSON.parse(r.stdout).ready, true);
});

t.test('nothing listening: exit 1 once the wait runs out, naming the address', async (t) => {
  const port = await freePort();
  const started = Date.now();
  const r = await runBin(['ready', '--wait', '1s'], { env: { POSTERN_HTTP_HOST: '0.0.0.0', POSTERN_HTTP_PORT: String(port) } });
  t.equal(r.code, 1);
  t.ok(Date.now() - started >= 1_000, 'it waited');
  t.match(r.stderr, `postern: not ready after 1s: no answer from http://127.0.0.1:${port}`);
  t.equal(r.stdout, '');
});

t.test('a daemon that answers 503 is not ready, and its reasons are said', async (t) => {
  // A peer answering as a daemon whose migrations lag would: the command reports what /readyz says.
  const server = createHttpServer((_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ready: false, reasons: ['migrations: 2 pending (run postern migrate)'], checks: {} }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const { port } = server.address() as AddressInfo;
  const r = await runBin(['ready', '--url', `http://127.0.0.1:${port}/`]);
  t.equal(r.code, 1);
  t.match(r.stderr, 'postern: not ready: migrations: 2 pending (run postern migrate)');
});

t.test('bad arguments are usage errors', async (t) => {
  const wait = await runBin(['ready', '--wait', 'soon', '--url', 'http://127.0.0.1:1']);
  t.equal(wait.code, 2);
  t.match(wait.stderr, '--wait must be a duration');
  const url = await runBin(['ready', '--url', 'ftp://x/y']);
  t.equal(url.code, 2);
  t.match(url.stderr, '--url must be');
  const anyPort = await runBin(['ready'], { env: { POSTERN_HTTP_PORT: '0' } });
  t.equal(anyPort.code, 2);
  t.match(anyPort.stderr, 'http.port is 0');
});

t.test('the systemd unit waits for readiness and passes systemd-analyze verify', async (t) => {
  const unit = readFileSync(UNIT, 'utf8');
  t.match(
    unit,
    /^ExecStartPost=\/usr\/bin\/node \/opt\/postern\/bin\/postern\.js ready --wait \d+s --config \/etc\/postern\/postern\.json$/m,
  );
  t.match(unit, /^TimeoutStartSec=\d+$/m);
  const verify = await new Promise<{ code: number; out: string }>((resolve) =>
    execFile('systemd-analyze', ['verify', UNIT], (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: stdout + stderr }),
    ),
  );
  t.equal(verify.code, 0, verify.out);
  t.equal(verify.out.trim(), '', 'no warnings');
});

t.test("the image's health check asks the port a config file sets, as the daemon listens on it", async (t) => {
  // Before, the health check read POSTERN_HTTP_PORT alone (else 8025): a port set in the config
  // file (POSTERN_CONFIG, the way a container names one for every process in it) left the
  // container unhealthy while the daemon served.
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const check = /^HEALTHCHECK (?:--\S+ )*CMD (.+)$/m.exec(dockerfile)?.[1];
  t.ok(check, 'the Dockerfile has a HEALTHCHECK in shell form');
  // What the image's ENV sets, as the health check's process sees it (it runs beside `serve`).
  const imageEnv = Object.fromEntries(
    [.../^ENV ((?:.*\\\n)*.*)$/m.exec(dockerfile)![1].matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]] as [string, string]),
  );
  t.equal(imageEnv.POSTERN_HTTP_HOST, '0.0.0.0', "the image's ENV is read");
  t.notOk('POSTERN_HTTP_PORT' in imageEnv, 'the image leaves the HTTP port to the configuration');

  const port = await freePort();
  const dir = t.testdir({ 'postern.json': JSON.stringify({ http: { port } }) });
  const config = path.join(dir, 'postern.json');
  const healthCheck = () =>
    new Promise<{ code: number; out: string; err: string }>((resolve) => {
      const env = { ...process.env, ...imageEnv, POSTERN_CONFIG: config, POSTERN_DATA_DIR: path.join(dir, 'data') };
      execFile('sh', ['-c', check!], { cwd: ROOT, env, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: stdout, err: stderr }),
      );
    });

  t.equal((await healthCheck()).code, 1, 'nothing listens yet: unhealthy (1)');
  const daemon = await spawnDaemon({
    POSTERN_CONFIG: config,
    POSTERN_DATA_DIR: path.join(dir, 'data'),
    POSTERN_SMTP_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.test',
  });
  t.teardown(async () => {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  });
  t.equal(daemon.http, port, 'the daemon took its port from the file');
  const healthy = await healthCheck();
  t.equal(healthy.code, 0, healthy.out + healthy.err);
  // stdout alone: stderr may carry warnings (a variable that names no setting, as CI's own do).
  t.match(JSON.parse(healthy.out), { ready: true });

  const unreadable = await new Promise<number>((resolve) =>
    execFile(
      'sh',
      ['-c', check!],
      { cwd: ROOT, env: { ...process.env, ...imageEnv, POSTERN_CONFIG: path.join(dir, 'missing.json') } },
      (err) => resolve(err ? (typeof err.code === 'number' ? err.code : -1) : 0),
    ),
  );
  t.equal(unreadable, 1, 'a configuration it cannot read is unhealthy (1), never the reserved 2');
});
