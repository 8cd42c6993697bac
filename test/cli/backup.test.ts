// `postern backup` while the daemon is busy, `postern restore` into a fresh data directory, and a
// daemon started on the restored copy: every message accepted and every mail received before the
// backup began is there, and the queued ones are delivered. Restore never replaces a database
// that holds data without --force; on PostgreSQL both print the database tool's command (restore once
// no node runs).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';
import { runBin } from '../helpers/run-bin.js';
import { sqliteOnly } from '../helpers/databases.js';
import { until } from '../helpers/until.js';

sqliteOnly(
  'backup and restore copy the SQLite file; on PostgreSQL they print the pg_dump/pg_restore command, which the last test here checks',
);

t.test('a backup taken under load restores every message accepted before it began', async (t) => {
  const env = await setup(t);
  const { d } = env;
  const address = await createAddress(env);
  const accepted: string[] = [];
  const received: string[] = [];
  let snapshot: { sends: string[]; mails: number } | null = null;

  // 1,000 sends (test key: the test channel delivers them) and 200 inbound mails, in flight together,
  // paced so the load outlasts the start of the backup process.
  const pace = () => new Promise((r) => setTimeout(r, 150));
  const sends = (async () => {
    for (let batch = 0; batch < 20; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          d.request('POST', '/v1/send-raw', {
            key: env.ws.test,
            body: { to: `r${batch * 50 + i}@example.com`, channel: 'email', content: { subject: 'Hi', text: 'x' } },
          }),
        ),
      );
      for (const r of replies) if (r.status === 202) accepted.push(r.body.id);
      await pace();
    }
  })();
  const mails = (async () => {
    for (let batch = 0; batch < 20; batch++) {
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          sendRaw(
            d.smtpPort,
            { from: 'a@sender.example', to: [address.address] },
            simpleMail({ to: address.address, subject: `m${batch * 10 + i}` }),
          ),
        ),
      );
      received.push(...Array.from({ length: 10 }, (_, i) => `m${batch * 10 + i}`));
      await pace();
    }
  })();

  // Once some of each are in, take the backup in another process, as an operator would.
  await until('200 sends accepted and 40 mails received', () => accepted.length >= 200 && received.length >= 40);
  snapshot = { sends: [...accepted], mails: received.length };
  const dir = t.testdir({});
  const file = path.join(dir, 'postern.backup');
  const backup = await runBin(['backup', file], { env: { POSTERN_DATA_DIR: d.dataDir, POSTERN_LOG_LEVEL: 'warn' } });
  t.equal(backup.code, 0, backup.stderr);
  const made = JSON.parse(backup.stdout);
  t.match(made, { file, carried: ['secrets.key'] });
  t.ok(
    made.messages >= snapshot.sends.length,
    `the backup holds at least the ${snapshot.sends.length} messages accepted before it (${made.messages})`,
  );
  await Promise.all([sends, mails]);
  t.equal(accepted.length, 1000, 'every send was accepted');
  t.ok(made.messages < 1000 || made.receivedMessages < 200, 'the backup was taken while the load ran');

  // Restore into a fresh data directory and start a daemon there.
  const fresh = path.join(dir, 'data');
  const restored = await runBin(['restore', file], { env: { POSTERN_DATA_DIR: fresh, POSTERN_LOG_LEVEL: 'warn' } });
  t.equal(restored.code, 0, restored.stderr);
  t.match(JSON.parse(restored.stdout), { restored: ['secrets.key'], messages: made.messages });
  t.equal(readFileSync(path.join(fresh, 'secrets.key'), 'utf8'), readFileSync(path.join(d.dataDir, 'secrets.key'), 'utf8'));
  await d.stop();

  const again = await bootDaemon(t, { dataDir: fresh, env: { POSTERN_DNS_SERVERS: env.dns.address } });
  for (const id of snapshot.sends) {
    const m = await again.request('GET', `/v1/messages/${id}`, { key: env.ws.test });
    if (m.status !== 200) t.fail(`${id} is missing after the restore`);
  }
  t.pass(`all ${snapshot.sends.length} messages accepted before the backup are there`);
  const inbox = await again.request('GET', `/v1/inbound/messages?limit=100&address=${address.id}`, { key: env.ws.live });
  t.equal(inbox.status, 200);
  t.ok(made.receivedMessages >= snapshot.mails, 'every mail received before the backup is in it');

  // Leases held at the moment of the backup expire; the dispatcher then delivers what was queued.
  again.clock.advance(10 * 60_000);
  const dispatcher = again.app.workers.find((w) => w.name === 'dispatcher')!;
  for (let i = 0; i < 40; i++) await dispatcher.tick();
  const left = await again.app.db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', 'not in', ['delivered'])
    .executeTakeFirstOrThrow();
  t.equal(Number(left.n), 0, 'every restored message is delivered');

  // A database that holds data is not replaced without --force.
  await again.stop();
  const refused = await runBin(['restore', file], { env: { POSTERN_DATA_DIR: fresh, POSTERN_LOG_LEVEL: 'warn' } });
  t.equal(refused.code, 2);
  t.match(refused.stderr, /holds data; add --force to replace it/);
  const forced = await runBin(['restore', file, '--force'], { env: { POSTERN_DATA_DIR: fresh, POSTERN_LOG_LEVEL: 'warn' } });
  t.equal(forced.code, 0, forced.stderr);
  t.notOk(existsSync(`${file}.partial`));
});

t.test('on PostgreSQL, backup and restore print the database tool to use; no database, nothing to back up', async (t) => {
  const env = { POSTERN_DATABASE_URL: 'postgres://postern@db.example:5432/postern', POSTERN_DATA_DIR: t.testdir({}) };
  const b = await runBin(['backup', '/tmp/p.dump'], { env });
  t.equal(b.code, 2);
  t.match(b.stderr, "pg_dump --format=custom --file='/tmp/p.dump' 'postgres://postern@db.example:5432/postern'");
  // Restore first asks the database whether a node still runs (restore-guard.test.ts): one it
  // cannot reach gives no answer, and no restore line.
  const r = await runBin(['restore', '/tmp/p.dump'], { env });
  t.equal(r.code, 2);
  t.match(
    r.stderr,
    /^postern: cannot tell whether a node still uses the database: cannot reach PostgreSQL postgres:\/\/postern@db\.example/,
  );
  t.notMatch(r.stderr, /pg_restore/);
  const noDb = await runBin(['backup', path.join(env.POSTERN_DATA_DIR, 'x.backup')], { env: { POSTERN_DATA_DIR: env.POSTERN_DATA_DIR } });
  t.equal(noDb.code, 2);
  t.match(noDb.stderr, /^postern: nothing to back up: no database at .*postern\.sqlite/);
  t.notOk(existsSync(path.join(env.POSTERN_DATA_DIR, 'x.backup')), 'nothing written');
  const noFile = await runBin(['backup'], { env });
  t.equal(noFile.code, 2);
  t.match(noFile.stderr, /name one backup file/);
});
