// Inbound TLS: STARTTLS on the MX listener, and submission's STARTTLS and implicit TLS, negotiate
// TLS 1.2 or 1.3 and refuse older versions with a protocol_version alert; each STARTTLS session of
// the MX listener is counted by outcome (successful, or why its handshake failed) and shows in the
// TLS summary (GET /v1/reports/tls, `inbound`) beside the reports receivers mailed. The counts are
// kept in memory and written at shutdown (a second daemon on the same database reads them), and
// two writers of the same day and host add up, as the nodes of a cluster do.
import { createHook } from 'node:async_hooks';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import t from 'tap';
import { ManualClock } from '../helpers/clock.js';
import { createInboundTls, type InboundTls } from '../../src/reports/inbound-tls.js';
import { starttlsFailure } from '../../src/smtp/starttls-outcomes.js';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { freePort } from '../helpers/ports.js';
import { selfSignedCert } from '../helpers/self-signed.js';
import { reply, starttls } from '../helpers/starttls.js';
import { until } from '../helpers/until.js';

const DAY = '2026-11-21';
/** TLS 1.0 and 1.1 need OpenSSL's security level 0 on the client (OpenSSL 3 refuses them at level 1). */
const OLD_TLS = { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' } as const;

type Handshake = { protocol: string } | { error: string };

/**
 * A TLS handshake on `socket` (or a new connection to `port`, for implicit TLS). Once up, an EHLO is
 * answered inside it (so the server has finished its side too) before the connection is closed.
 */
function handshake(target: { socket: net.Socket } | { port: number }, opts: tls.ConnectionOptions): Promise<Handshake> {
  return new Promise((resolve) => {
    const s = tls.connect({ ...target, host: '127.0.0.1', rejectUnauthorized: false, ...opts });
    s.once('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    s.once('secureConnect', () => {
      const protocol = s.getProtocol() ?? '';
      const ehlo = () => s.write('EHLO client.example.org\r\n');
      // Implicit TLS: the greeting comes first (a client talking before it is an early talker).
      let greeted = 'socket' in target;
      let buf = '';
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        if (!greeted && /^220 /m.test(buf)) {
          greeted = true;
          buf = '';
          ehlo();
        } else if (/^250 /m.test(buf)) {
          s.destroy();
          resolve({ protocol });
        }
      });
      if (greeted) ehlo();
    });
  });
}

const starttlsHandshake = async (port: number, opts: tls.ConnectionOptions) => handshake({ socket: await starttls(port) }, opts);

/** `openssl s_client` over STARTTLS, checking the server's certificate against `caFile`; resolves with its stderr. */
function opensslClient(port: number, caFile: string): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(
      'openssl',
      ['s_client', '-connect', `127.0.0.1:${port}`, '-starttls', 'smtp', '-verify_return_error', '-CAfile', caFile],
      { timeout: 30_000 },
      (_err, _out, errOut) => resolve(errOut),
    );
    child.stdin?.end();
  });
}

const hasOpenssl = () => new Promise<boolean>((resolve) => execFile('openssl', ['version'], (err) => resolve(!err)));

async function inboundDays(d: TestDaemon, key: string) {
  const res = await d.request('GET', `/v1/reports/tls?from=${DAY}&to=${DAY}`, { key });
  if (res.status !== 200) throw new Error(`GET /v1/reports/tls: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as {
    data: unknown[];
    inbound: { hostname: string; day: string; successful: number; failed: number; failures: Record<string, number> }[];
  };
}

t.test('a failed handshake is classified on its error code, never its text', async (t) => {
  const cases: [{ code?: string } | null, boolean, string][] = [
    [{ code: 'ERR_SSL_UNSUPPORTED_PROTOCOL' }, false, 'protocol-version'],
    [{ code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' }, false, 'protocol-version'],
    [{ code: 'ERR_SSL_NO_SHARED_CIPHER' }, false, 'no-shared-cipher'],
    [{ code: 'ERR_SSL_NO_SUITABLE_SIGNATURE_ALGORITHM' }, false, 'no-shared-cipher'],
    [{ code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' }, false, 'certificate-not-trusted'],
    [{ code: 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE' }, false, 'certificate-not-trusted'],
    [{ code: 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED' }, false, 'certificate-expired'],
    [{ code: 'ERR_TLS_HANDSHAKE_TIMEOUT' }, false, 'handshake-timeout'],
    [{ code: 'ERR_SSL_NO_SHARED_CIPHER' }, true, 'handshake-timeout'],
    [{ code: 'SocketError' }, false, 'handshake-aborted'],
    [{ code: 'ECONNRESET' }, false, 'handshake-aborted'],
    [null, false, 'handshake-aborted'],
    [{ code: 'ERR_SSL_WRONG_VERSION_NUMBER' }, false, 'starttls-handshake-failure'],
    [{}, false, 'starttls-handshake-failure'],
  ];
  for (const [err, timedOut, want] of cases) t.equal(starttlsFailure(err, timedOut), want, `${JSON.stringify(err)} timedOut=${timedOut}`);
});

for (const db of testDatabases()) {
  t.test(`inbound STARTTLS: TLS 1.2+, every session counted in the TLS summary (${db})`, async (t) => {
    const clock = new ManualClock(`${DAY}T12:00:00Z`);
    const d = await bootDaemon(t, {
      db,
      clock,
      env: {
        // The handshake a client leaves hanging is cut by the command timeout.
        POSTERN_SMTP_COMMAND_TIMEOUT: '2s',
        POSTERN_SUBMISSION_ENABLED: 'true',
        POSTERN_SUBMISSION_TLS_PORT: String(await freePort()),
      },
    });
    const ws = await d.workspace('acme');

    // Refused below TLS 1.2, with the protocol_version alert (smtp-server alone would speak TLS 1.0).
    t.same(await starttlsHandshake(d.smtpPort, OLD_TLS), { error: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' }, 'TLS 1.1 is refused');
    t.same(await starttlsHandshake(d.smtpPort, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' }), { protocol: 'TLSv1.2' });
    t.same(await starttlsHandshake(d.smtpPort, { minVersion: 'TLSv1.3' }), { protocol: 'TLSv1.3' });
    // Our certificate is RSA: a client offering only ECDSA suites has nothing in common with us.
    t.match(await starttlsHandshake(d.smtpPort, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' }), {
      error: /^ERR_SSL/,
    });
    // A client that goes away in the middle of the handshake, and one that never starts it.
    (await starttls(d.smtpPort)).destroy();
    const silent = await starttls(d.smtpPort);
    await new Promise((resolve) => silent.once('close', resolve));
    // A session without STARTTLS is not a TLS session: not counted.
    const plain = net.connect({ port: d.smtpPort, host: '127.0.0.1' });
    await reply(plain);
    plain.write('QUIT\r\n');
    await reply(plain);
    plain.destroy();

    const failures: Record<string, number> = {
      'protocol-version': 1,
      'no-shared-cipher': 1,
      'handshake-aborted': 1,
      'handshake-timeout': 1,
    };
    if (await hasOpenssl()) {
      // A sender that does not trust our certificate says so with an unknown_ca alert.
      const dir = mkdtempSync(path.join(tmpdir(), 'postern-ca-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      writeFileSync(path.join(dir, 'other-ca.pem'), selfSignedCert().cert);
      t.match(await opensslClient(d.smtpPort, path.join(dir, 'other-ca.pem')), /certificate verify failed/);
      failures['certificate-not-trusted'] = 1;
    } else {
      t.comment('openssl is not installed: the unknown_ca case is not tried');
    }
    const failed = Object.values(failures).reduce((a, b) => a + b, 0);

    // Each session is counted as it ends; the summary adds what this node has not written yet.
    const inbound = await until('the inbound sessions in the TLS summary', async () => {
      const days = (await inboundDays(d, ws.live)).inbound;
      return days[0] && days[0].successful + days[0].failed === 2 + failed && days;
    });
    t.same(inbound, [{ hostname: 'mx.postern.test', day: DAY, successful: 2, failed, failures }]);
    t.same((await inboundDays(d, ws.live)).data, [], 'no report was mailed: no outbound day');

    // The submission ports refuse old TLS too, on STARTTLS and implicit TLS alike.
    t.same(await starttlsHandshake(d.submissionPort!, OLD_TLS), { error: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
    t.same(await handshake({ port: d.submissionTlsPort! }, OLD_TLS), { error: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
    t.same(await handshake({ port: d.submissionTlsPort! }, { maxVersion: 'TLSv1.2' }), { protocol: 'TLSv1.2' });
    t.same(await handshake({ port: d.submissionTlsPort! }, {}), { protocol: 'TLSv1.3' });
  });

  t.test(`inbound STARTTLS counts are written at shutdown and add up across writers (${db})`, async (t) => {
    const clock = new ManualClock(`${DAY}T23:00:00Z`);
    const a = await bootDaemon(t, { db, clock });
    t.same(await starttlsHandshake(a.smtpPort, {}), { protocol: 'TLSv1.3' });
    (await starttls(a.smtpPort)).destroy();
    // Stopping waits for the listener's sessions to end, then writes what they counted.
    await a.stop();

    const b = await bootDaemon(t, {
      clock,
      ...(db === 'postgres' ? { databaseUrl: a.env.POSTERN_DATABASE_URL } : { dataDir: a.dataDir }),
    });
    const ws = await b.workspace('acme');
    const row = { hostname: 'mx.postern.test', day: DAY };
    t.same((await inboundDays(b, ws.live)).inbound, [{ ...row, successful: 1, failed: 1, failures: { 'handshake-aborted': 1 } }]);

    // Another node of the cluster with the same host name: its counts are added, not written over.
    const other = createInboundTls({ db: b.app.db, clock, log: b.app.log, hostname: 'mx.postern.test', flushEveryMs: 3_600_000 });
    t.teardown(() => other.close());
    other.count('successful');
    other.count('handshake-aborted');
    other.count('protocol-version');
    await other.flush();
    t.same((await inboundDays(b, ws.live)).inbound, [
      { ...row, successful: 2, failed: 3, failures: { 'handshake-aborted': 2, 'protocol-version': 1 } },
    ]);
  });

  t.test(`inbound STARTTLS counts: no flush timer until a session is counted, then one that writes them (${db})`, async (t) => {
    const clock = new ManualClock(`${DAY}T12:00:00Z`);
    const d = await bootDaemon(t, { db, clock });
    // Timers made while `fn` runs synchronously (nothing else runs in between), unref'd ones too.
    const timersMadeBy = (fn: () => void): number => {
      let made = 0;
      const hook = createHook({ init: (_id, type) => void (type === 'Timeout' && made++) }).enable();
      try {
        fn();
      } finally {
        hook.disable();
      }
      return made;
    };
    const make = (hostname: string) => createInboundTls({ db: d.app.db, clock, log: d.app.log, hostname, flushEveryMs: 10 });
    const idle: InboundTls[] = [];
    t.equal(
      timersMadeBy(() => idle.push(...Array.from({ length: 5 }, () => make('idle.postern.test')))),
      0,
      'built (as the CLI builds it) but never counting: no timer',
    );
    const counting = make('counting.postern.test');
    t.teardown(() => Promise.all([...idle, counting].map((x) => x.close())));
    t.equal(
      timersMadeBy(() => {
        counting.count('successful');
        counting.count('successful');
      }),
      1,
      'the first count arms one flush, the second none more',
    );
    const written = () =>
      d.app.db.selectFrom('inbound_tls_sessions').select('sessions').where('hostname', '=', 'counting.postern.test').executeTakeFirst();
    await until('the armed flush to write both sessions', async () => Number((await written())?.sessions ?? 0) === 2);
  });
}
