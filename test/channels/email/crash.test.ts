// SIGKILL of a daemon in the middle of email delivery to a loopback MX: after a restart every
// accepted message reaches the MX, and a message arrives twice only if it was in flight at the
// kill (the dispatcher hands over at most `dispatcher.concurrency` messages at once). The
// Message-ID, derived from the message id, identifies duplicates at the MX.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { startDnsServer } from '../../helpers/dns-server.js';
import { readBootstrapKeys } from '../../helpers/run-bin.js';
import { spawnDaemon } from '../../helpers/spawn.js';
import { startSink } from '../../helpers/smtp-sink.js';

t.test('no accepted email is lost across SIGKILL; duplicates are bounded by the in-flight count', async (t) => {
  const sink = await startSink(t);
  const dns = await startDnsServer({
    'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
    'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
  });
  t.teardown(() => dns.close());
  const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-email-crash-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const concurrency = 8;
  const env = {
    POSTERN_DATA_DIR: dataDir,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_HOSTNAME: 'mx.postern.test',
    POSTERN_RATE_LIMIT_SEND: '0',
    POSTERN_RATE_LIMIT_READ: '0',
    POSTERN_DNS_SERVERS: dns.address,
    POSTERN_DELIVERY_PORT: String(sink.port),
    POSTERN_DISPATCHER_CONCURRENCY: String(concurrency),
    POSTERN_DISPATCHER_LEASE: '5s',
    POSTERN_DISPATCHER_INTERVAL: '200ms',
    POSTERN_SENDER_CAPS_ENABLED: 'false',
    POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
  };
  const first = await spawnDaemon(env);
  const key = readBootstrapKeys(dataDir).live;
  const base = `http://127.0.0.1:${first.http}`;
  const accepted: string[] = [];
  let stop = false;
  let n = 0;
  const sender = async () => {
    while (!stop) {
      const body = JSON.stringify({ to: `user${n++}@example.net`, channel: 'email', content: { subject: 's', text: 't' } });
      try {
        const r = await fetch(`${base}/v1/send-raw`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
        });
        if (r.status === 202) accepted.push(((await r.json()) as { id: string }).id);
      } catch {
        return;
      }
    }
  };
  const senders = Array.from({ length: 4 }, sender);
  // Kill while delivery is under way: some messages already at the MX, others queued.
  for (let i = 0; i < 1000 && sink.received.length < 40; i++) await delay(10);
  first.child.kill('SIGKILL');
  await first.exited;
  stop = true;
  await Promise.all(senders);
  const beforeRestart = sink.received.length;
  t.ok(beforeRestart > 0 && accepted.length > beforeRestart, `${accepted.length} accepted, ${beforeRestart} at the MX before the kill`);

  const second = await spawnDaemon(env);
  t.teardown(() => void second.child.kill('SIGKILL'));
  const idOf = (raw: Buffer) => /^Message-ID: <(msg_[0-9A-Za-z]+)@/im.exec(raw.toString())?.[1];
  for (let i = 0; i < 300; i++) {
    const got = new Set(sink.received.map((r) => idOf(r.raw)));
    if (accepted.every((id) => got.has(id))) break;
    await delay(100);
  }
  const counts = new Map<string, number>();
  for (const r of sink.received) counts.set(idOf(r.raw)!, (counts.get(idOf(r.raw)!) ?? 0) + 1);
  const missing = accepted.filter((id) => !counts.has(id));
  t.same(missing, [], 'every accepted message reached the MX');
  const duplicated = [...counts.values()].filter((c) => c > 1).length;
  t.ok(duplicated <= concurrency, `${duplicated} duplicated (at most the ${concurrency} in flight)`);
  t.ok(
    [...counts.values()].every((c) => c <= 2),
    'no message arrived more than twice',
  );
  second.child.kill('SIGKILL');
  await second.exited;
});
