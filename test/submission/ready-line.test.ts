// The daemon as shipped (bin/postern.js) names both submission ports in its ready line, each offers
// AUTH PLAIN LOGIN (587 with STARTTLS, 465 over TLS from the first byte), and a port that cannot be
// had stops the start with the setting to change. Off by default: the ready line says null.
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import t from 'tap';
import { databaseEnv, testDatabases } from '../helpers/databases.js';
import { freePort } from '../helpers/ports.js';
import { runBin } from '../helpers/run-bin.js';
import { spawnDaemon } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

/** What the server says to EHLO on a socket, once its greeting arrived. */
async function ehlo(socket: net.Socket): Promise<string> {
  let seen = '';
  socket.on('data', (c: Buffer) => (seen += c.toString()));
  socket.on('error', () => {});
  await until('the greeting', () => seen.includes('220 '));
  socket.write('EHLO client\r\n');
  await until('the EHLO reply', () => /^250 /m.test(seen.slice(seen.indexOf('\r\n') + 2)));
  socket.destroy();
  return seen;
}

for (const db of testDatabases()) {
  t.test(`the ready line names the submission ports, on ${db}`, async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-ready-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const base = {
      ...(await databaseEnv(t, db)),
      POSTERN_DATA_DIR: dataDir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_HOSTNAME: 'mx.postern.test',
    };
    const off = await spawnDaemon(base);
    const offReady = JSON.parse(off.lines.find((l) => l.includes('"msg":"ready"'))!);
    t.equal(offReady.submission, null, 'off by default');
    off.child.kill('SIGTERM');
    await off.exited;

    const tlsPort = await freePort();
    const env = {
      ...base,
      POSTERN_SUBMISSION_ENABLED: 'true',
      POSTERN_SUBMISSION_HOST: '127.0.0.1',
      POSTERN_SUBMISSION_PORT: '0',
      POSTERN_SUBMISSION_TLS_PORT: String(tlsPort),
    };
    const d = await spawnDaemon(env);
    t.teardown(async () => {
      d.child.kill('SIGTERM');
      await d.exited;
    });
    const ready = JSON.parse(d.lines.find((l) => l.includes('"msg":"ready"'))!);
    t.match(ready.submission, { port: Number, tlsPort }, 'both ports');
    const plain = await ehlo(net.connect(ready.submission.port, '127.0.0.1'));
    t.match(plain, /250-STARTTLS/, '587: STARTTLS');
    t.match(plain, /250-AUTH PLAIN LOGIN/);
    const secure = await ehlo(tls.connect({ host: '127.0.0.1', port: tlsPort, rejectUnauthorized: false }));
    t.match(secure, /250-AUTH PLAIN LOGIN/, '465: AUTH over TLS');
    t.notMatch(secure, /STARTTLS/, '465: no STARTTLS, it is TLS already');

    // A second daemon cannot have the same submissions port: the start fails naming the settings.
    const otherDir = mkdtempSync(path.join(tmpdir(), 'postern-ready-'));
    t.teardown(() => rmSync(otherDir, { recursive: true, force: true }));
    const second = await runBin(['serve'], { env: { ...env, POSTERN_DATA_DIR: otherDir, POSTERN_METRICS_PORT: '0' } });
    t.not(second.code, 0);
    t.match(second.stderr + second.stdout, /cannot listen for SUBMISSION .*submission\.host, submission\.port, submission\.tlsPort/);
  });
}
