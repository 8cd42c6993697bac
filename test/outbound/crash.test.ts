// SIGKILL while messages are being accepted and dispatched: after a restart every message that got
// a 202 exists and is eventually handed to its channel (the test channel: status delivered).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { databaseEnv, testDatabases } from '../helpers/databases.js';
import { readBootstrapKeys } from '../helpers/run-bin.js';
import { spawnDaemon } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

for (const db of testDatabases()) {
  t.test(`every 202 survives SIGKILL and is delivered after restart (${db})`, async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-crash-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = {
      ...(await databaseEnv(t, db)),
      POSTERN_DATA_DIR: dataDir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      POSTERN_RATE_LIMIT_SEND: '0',
      POSTERN_RATE_LIMIT_READ: '0',
      // A short lease so the killed daemon's claims are retaken quickly.
      POSTERN_DISPATCHER_LEASE: '5s',
      POSTERN_DISPATCHER_INTERVAL: '200ms',
    };
    const first = await spawnDaemon(env);
    const key = readBootstrapKeys(dataDir).test;
    const base = `http://127.0.0.1:${first.http}`;
    const accepted: string[] = [];
    let stop = false;
    const body = JSON.stringify({ to: 'crash@example.com', channel: 'email', content: { subject: 's', text: 't' } });
    const sender = async () => {
      while (!stop) {
        try {
          const r = await fetch(`${base}/v1/send`, {
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
    const senders = Array.from({ length: 8 }, sender);
    // Kill once a good number were accepted (and the dispatcher is busy with them).
    await until('300 sends accepted', () => accepted.length >= 300);
    first.child.kill('SIGKILL');
    await first.exited;
    stop = true;
    await Promise.all(senders);
    t.ok(accepted.length >= 50, `${accepted.length} sends accepted before the kill`);

    const second = await spawnDaemon(env);
    t.teardown(() => {
      second.child.kill('SIGKILL');
    });
    const base2 = `http://127.0.0.1:${second.http}`;
    // One assertion per outcome, on the final state: an assertion per poll would make the suite's
    // count depend on how fast delivery happened to be.
    const pending = new Set(accepted);
    const lost = new Set<string>();
    await until(
      'every accepted message delivered or found missing',
      async () => {
        for (const id of [...pending]) {
          const r = await fetch(`${base2}/v1/messages/${id}`, { headers: { authorization: `Bearer ${key}` } });
          if (r.status === 404) {
            lost.add(id);
            pending.delete(id);
            continue;
          }
          const m = (await r.json()) as { status: string };
          if (m.status === 'delivered') pending.delete(id);
        }
        return pending.size === 0;
      },
      120_000,
    ).catch((e: Error) => t.fail(e.message)); // the assertions below name what is still pending
    t.same([...lost], [], 'every accepted message exists after the crash');
    t.same([...pending], [], 'every accepted message was handed to its channel');
  });
}
