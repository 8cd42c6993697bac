// SIGKILL during a burst of inbound mail: every message that got a 250 is stored and listed after
// a restart. Runs the real binary (npm run build first).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import { databaseEnv, testDatabases } from '../helpers/databases.js';
import { readBootstrapKeys } from '../helpers/run-bin.js';
import { spawnDaemon } from '../helpers/spawn.js';
import { sendRaw, simpleMail } from '../helpers/inbound.js';

for (const db of testDatabases()) {
  t.test(`every 250 survives SIGKILL (${db})`, async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-inbound-crash-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const dns = await startDnsServer();
    t.teardown(() => dns.close());
    const env = {
      ...(await databaseEnv(t, db)),
      POSTERN_DATA_DIR: dataDir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      POSTERN_HOSTNAME: 'mx.postern.test',
      POSTERN_SHARED_INBOUND_DOMAIN: 'postern.test',
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_RATE_LIMIT_SEND: '0',
      POSTERN_RATE_LIMIT_READ: '0',
    };
    const t0 = Date.now();
    const first = await spawnDaemon(env);
    t.comment(`first ready ${Date.now() - t0}ms`);
    const key = readBootstrapKeys(dataDir).live;
    const api = (port: number, p: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${port}${p}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      }).then((r) => r.json() as Promise<any>);
    const addr = await api(first.http, '/v1/inbound/addresses', { method: 'POST', body: JSON.stringify({ localPart: 'burst' }) });
    const to = addr.address as string;

    const acked: string[] = [];
    let killed = false;
    const worker = async (w: number) => {
      for (let i = 0; i < 200 && !killed; i++) {
        try {
          const reply = await sendRaw(first.smtp, { from: 'a@example.org', to: [to] }, simpleMail({ to, subject: `w${w}-${i}` }));
          const id = /stored as (rcv_\w+)/.exec(reply)?.[1];
          if (id) acked.push(id);
          if (acked.length >= 60 && !killed) {
            killed = true;
            first.child.kill('SIGKILL');
          }
        } catch {
          return; // the daemon is gone: anything without a 250 may or may not be stored
        }
      }
    };
    await Promise.all(Array.from({ length: 10 }, (_, w) => worker(w)));
    await first.exited;
    t.comment(`killed ${Date.now() - t0}ms`);
    t.ok(acked.length >= 60, `${acked.length} messages acknowledged before the kill`);

    const second = await spawnDaemon(env);
    t.teardown(() => {
      second.child.kill('SIGTERM');
      return second.exited;
    });
    t.comment(`second ready ${Date.now() - t0}ms`);
    const listed = new Set<string>();
    let before: string | undefined;
    for (let page = 0; page < 50; page++) {
      const q = `/v1/inbound/messages?limit=100${before ? `&before=${encodeURIComponent(before)}` : ''}`;
      const { messages } = await api(second.http, q);
      for (const m of messages) listed.add(m.id);
      if (messages.length < 100) break;
      before = messages[messages.length - 1].receivedAt;
    }
    const missing = acked.filter((id) => !listed.has(id));
    t.same(missing, [], 'no acknowledged message is lost');
    const t1 = Date.now();
    second.child.kill('SIGTERM');
    await second.exited;
    t.comment(`second stopped in ${Date.now() - t1}ms`);
  });
}
