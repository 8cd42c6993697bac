// Several nodes started at once on one empty PostgreSQL database (docs/cluster.md): each migrates
// and bootstraps, and every one must come up. Kysely's migrator holds an advisory lock while it
// migrates; the first start's workspace `default` is made by whichever node gets there first, and
// the others see it and go on (they once crashed with `workspace default already exists`).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { freshPostgres } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { spawnDaemon, type Spawned } from '../helpers/spawn.js';

const pg = process.env.POSTERN_TEST_DATABASE_URL;

t.test(
  'three nodes started together on an empty database all come up, with one default workspace',
  { skip: !pg && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const dns = await startDnsServer();
    t.teardown(() => dns.close());
    // Several rounds: the race is between a count and an insert, and does not lose every time.
    for (let round = 0; round < 4; round++) {
      const db = await freshPostgres();
      const nodes: Spawned[] = [];
      t.teardown(async () => {
        for (const n of nodes) n.child.kill('SIGKILL');
        await Promise.all(nodes.map((n) => n.exited));
        await db.drop();
      });
      const start = () =>
        spawnDaemon({
          POSTERN_DATABASE_URL: db.url,
          POSTERN_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'postern-node-')),
          POSTERN_HTTP_PORT: '0',
          POSTERN_SMTP_PORT: '0',
          POSTERN_SMTP_HOST: '127.0.0.1',
          POSTERN_HOSTNAME: 'mx.postern.test',
          POSTERN_DNS_SERVERS: dns.address,
        });
      const started = await Promise.allSettled([start(), start(), start()]);
      for (const s of started) if (s.status === 'fulfilled') nodes.push(s.value);
      t.same(
        started.map((s) => (s.status === 'fulfilled' ? 'up' : String(s.reason))),
        ['up', 'up', 'up'],
        `round ${round + 1}: every node is up`,
      );
      const created = nodes.filter((n) =>
        n.lines.some((l) => l.includes('created workspace \\"default\\"') || l.includes('created workspace "default"')),
      );
      t.equal(created.length, 1, `round ${round + 1}: one node made the default workspace and its keys`);
      for (const n of nodes) n.child.kill('SIGTERM');
      await Promise.all(nodes.map((n) => n.exited));
      nodes.length = 0;
    }
  },
);
