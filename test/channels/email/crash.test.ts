// SIGKILL of a daemon in the middle of email delivery to a loopback MX, three times over, on
// SQLite and on PostgreSQL: after the last restart every accepted message reaches the MX, and a
// message arrives twice only if it was in flight at a kill (the dispatcher hands over at most
// `dispatcher.concurrency` messages at once). The Message-ID, derived from the message id,
// identifies duplicates at the MX.
//
// The verdict does not wait a fixed time: the test waits until every accepted message has arrived,
// and fails as soon as one that has not arrived is settled elsewhere (a final status, or no row at
// all), which is what a lost message is. A message still queued or in flight is waited for.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freshPostgres, testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { readBootstrapKeys } from '../../helpers/run-bin.js';
import { spawnDaemon, type Spawned } from '../../helpers/spawn.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { until } from '../../helpers/until.js';

// CRASH_KILLS=10 runs a longer drill (docs/testing.md).
const KILLS = Number(process.env.CRASH_KILLS) || 3;
const CONCURRENCY = 8;
const idOf = (raw: Buffer) => /^Message-ID: <(msg_[0-9A-Za-z]+)@/im.exec(raw.toString())?.[1];

for (const db of testDatabases()) {
  t.test(`no accepted email is lost across ${KILLS} SIGKILLs on ${db}; duplicates are bounded by the in-flight count`, async (t) => {
    const sink = await startSink(t);
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-email-crash-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    let databaseUrl = '';
    if (db === 'postgres') {
      const fresh = await freshPostgres();
      databaseUrl = fresh.url;
      t.teardown(() => fresh.drop());
    }
    const env = {
      POSTERN_DATA_DIR: dataDir,
      POSTERN_DATABASE_URL: databaseUrl,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      POSTERN_HOSTNAME: 'mx.postern.test',
      POSTERN_RATE_LIMIT_SEND: '0',
      POSTERN_RATE_LIMIT_READ: '0',
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_DELIVERY_PORT: String(sink.port),
      POSTERN_DISPATCHER_CONCURRENCY: String(CONCURRENCY),
      POSTERN_DISPATCHER_LEASE: '5s',
      POSTERN_DISPATCHER_INTERVAL: '200ms',
      POSTERN_SENDER_CAPS_ENABLED: 'false',
      POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
    };
    const running: Spawned[] = [];
    t.teardown(() => running.forEach((d) => d.child.exitCode === null && d.child.kill('SIGKILL')));
    const accepted: string[] = [];
    let n = 0;

    // Each round: a daemon, four senders sending up to 100 messages, and a SIGKILL once 30 more
    // messages reached the MX.
    for (let round = 0; round < KILLS; round++) {
      const daemon = await spawnDaemon(env);
      running.push(daemon);
      const key = readBootstrapKeys(dataDir).live;
      const base = `http://127.0.0.1:${daemon.http}`;
      let stop = false;
      const quota = accepted.length + 100;
      const sender = async () => {
        while (!stop && accepted.length < quota) {
          const body = JSON.stringify({ to: `user${n++}@example.net`, channel: 'email', content: { subject: 's', text: 't' } });
          try {
            const r = await fetch(`${base}/v1/send-raw`, {
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body,
            });
            if (r.status === 202) accepted.push(((await r.json()) as { id: string }).id);
          } catch {
            return; // the daemon is gone
          }
        }
      };
      const senders = Array.from({ length: 4 }, sender);
      await sink.waitFor(sink.received.length + 30);
      daemon.child.kill('SIGKILL');
      await daemon.exited;
      stop = true;
      await Promise.all(senders);
    }
    t.ok(accepted.length > sink.received.length, `${accepted.length} accepted, ${sink.received.length} at the MX before the last restart`);

    const last = await spawnDaemon(env);
    running.push(last);
    const key = readBootstrapKeys(dataDir).live;
    const statusOf = async (id: string) => {
      const r = await fetch(`http://127.0.0.1:${last.http}/v1/messages/${id}`, { headers: { authorization: `Bearer ${key}` } });
      return r.status === 404 ? 'no such message' : ((await r.json()) as { status: string; error: string | null }).status;
    };
    const idsAtMx = () => new Set(sink.received.map((r) => idOf(r.raw)));
    let looked = -1;
    const lost = await until(
      'every accepted message at the MX, or one missing that is settled',
      async () => {
        const missing = accepted.filter((id) => !idsAtMx().has(id));
        if (!missing.length) return [];
        // Statuses are asked only when nothing arrived since the last look (no request storm
        // while deliveries flow), and read before the MX is looked at again: the sink records a
        // message before its 250, so one settled as sent is there by then.
        if (sink.received.length !== looked) {
          looked = sink.received.length;
          return false;
        }
        const states = await Promise.all(missing.map(async (id) => [id, await statusOf(id)] as const));
        const got = idsAtMx();
        const settled = states.filter(([id, s]) => !got.has(id) && !['queued', 'scheduled', 'dispatched'].includes(s));
        return settled.length ? settled.map(([id, s]) => `${id}: ${s}`) : false;
      },
      120_000,
    );
    t.same(lost, [], 'every accepted message reached the MX');
    const counts = new Map<string, number>();
    for (const r of sink.received) counts.set(idOf(r.raw)!, (counts.get(idOf(r.raw)!) ?? 0) + 1);
    const duplicated = [...counts.values()].filter((c) => c > 1).length;
    t.ok(duplicated <= CONCURRENCY * KILLS, `${duplicated} duplicated (at most the ${CONCURRENCY} in flight at each kill)`);
    t.ok(
      [...counts.values()].every((c) => c <= 1 + KILLS),
      'no message arrived more often than once per kill',
    );
  });
}
