// SIGKILL with deliveries pending and in flight: after a restart every event still arrives.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openDatabase } from '../../src/db/database.js';
import { recordEvent } from '../../src/events/record.js';
import { systemClock } from '../../src/lib/clock.js';
import { createIds } from '../../src/lib/ids.js';
import { freshPostgres, testDatabases } from '../helpers/databases.js';
import { readBootstrapKeys } from '../helpers/run-bin.js';
import { spawnDaemon } from '../helpers/spawn.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

for (const db of testDatabases()) {
  t.test(`SIGKILL with deliveries pending on ${db}: all arrive after restart`, async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-crash-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    let databaseUrl = '';
    if (db === 'postgres') {
      const pg = await freshPostgres();
      t.teardown(pg.drop);
      databaseUrl = pg.url;
    }
    const env = {
      POSTERN_DATA_DIR: dataDir,
      POSTERN_DATABASE_URL: databaseUrl,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true',
      POSTERN_WEBHOOKS_TIMEOUT: '1000ms',
      POSTERN_WEBHOOKS_LEASE: '1500ms',
      POSTERN_WEBHOOKS_POLL_INTERVAL: '50ms',
      POSTERN_WEBHOOKS_CONCURRENCY_PER_ENDPOINT: '3',
    };
    // Until the kill, the receiver holds every request open: three are in flight, the rest wait.
    const rx = await startReceiver(() => 'hang');
    t.teardown(() => rx.close());

    const first = await spawnDaemon(env);
    let killed = false;
    t.teardown(() => {
      if (!killed) first.child.kill('SIGKILL');
    });
    const live = readBootstrapKeys(dataDir).live;
    t.ok(live, 'bootstrap key printed');
    const res = await fetch(`http://127.0.0.1:${first.http}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${live}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: rx.url }),
    });
    t.equal(res.status, 201);

    // Producers write events in their own transactions; here a second process does, as the CLI would.
    const handle = openDatabase(
      db === 'postgres' ? { dialect: 'postgres', url: databaseUrl } : { dialect: 'sqlite', file: path.join(dataDir, 'postern.sqlite') },
    );
    const ws = await handle.db.selectFrom('workspaces').select('id').executeTakeFirstOrThrow();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(
        await recordEvent(
          handle.db,
          { clock: systemClock, ids: createIds() },
          { workspaceId: ws.id, livemode: true, type: 'message.sent', data: { n: i } },
        ),
      );
    }
    await handle.close();

    await rx.until(() => rx.hanging === 3, 'three held requests');
    t.equal(rx.hanging, 3, 'three attempts in flight at the kill');
    first.child.kill('SIGKILL');
    killed = true;
    await first.exited;

    rx.behaviour = () => 200;
    rx.release(503); // the connections of the dead process are gone anyway
    const second = await spawnDaemon(env);
    t.teardown(() => {
      second.child.kill('SIGKILL');
    });
    await rx.until(() => ids.every((id) => rx.processed.has(id)), 'every event acknowledged', 30_000);
    t.same([...rx.processed.keys()].sort(), [...ids].sort(), 'each event id acknowledged, no other');
    t.ok(rx.maxHanging <= 3, 'the concurrency cap held');
    second.child.kill('SIGTERM');
    t.equal(await second.exited, 0, 'a clean stop afterwards');
  });
}
