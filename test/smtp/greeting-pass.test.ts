// The greeting pause, postscreen's way (inbound/passed-clients.ts): first contact waits
// `smtp.greetingDelay` and is refused when it talks early; a client that waited and then spoke SMTP
// is greeted at once on its next connections, on every node of the same database, until
// `smtp.greetingPassTtl` runs out. The pause the client sits through here is 1.5 s; the node that
// must greet it "at once" has a pause of a minute (the most the setting allows), so a greeting that comes at all is a greeting
// without the pause, however loaded the machine (no upper bound on a measured time).
import net from 'node:net';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { freshPostgres, testDatabases } from '../helpers/databases.js';
import { until } from '../helpers/until.js';

const PAUSE_MS = 1500;
const env = { POSTERN_SMTP_GREETING_DELAY: `${PAUSE_MS}ms`, POSTERN_SMTP_GREETING_PASS_TTL: '1d' };
const LONG_PAUSE_MS = 60_000; // smtp.greetingDelay's largest value

/** Connects; optionally talks at once; returns the first reply and how long it took; says QUIT. */
async function connect(port: number, opts: { early?: boolean; ehlo?: boolean } = {}): Promise<{ reply: string; ms: number }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setEncoding('latin1');
  const started = performance.now();
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  if (opts.early) socket.write('EHLO early.example\r\n');
  let buf = '';
  const line = () =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const i = buf.indexOf('\r\n');
        if (i < 0) return false;
        const l = buf.slice(0, i);
        buf = buf.slice(i + 2);
        socket.off('data', onData);
        resolve(l);
        return true;
      };
      const onData = (d: string) => {
        buf += d;
        check();
      };
      if (!check()) socket.on('data', onData);
      socket.once('error', reject);
    });
  const reply = await line();
  const ms = performance.now() - started;
  if (opts.ehlo && reply.startsWith('220')) {
    socket.write('EHLO client.example\r\n');
    while (!/^250 /.test(await line()));
  }
  socket.end('QUIT\r\n');
  socket.destroy();
  return { reply, ms };
}

const passedRows = (d: TestDaemon) => d.app.db.selectFrom('smtp_passed_clients').selectAll().execute();

for (const db of testDatabases()) {
  t.test(`greeting pause with passed clients on ${db}`, async (t) => {
    // One database for two nodes: created here, so it outlives both.
    let databaseUrl: string | undefined;
    if (db === 'postgres') {
      const fresh = await freshPostgres();
      t.teardown(() => fresh.drop());
      databaseUrl = fresh.url;
    }
    const a = await bootDaemon(t, { db, databaseUrl, env });

    const early = await connect(a.smtpPort, { early: true });
    t.match(early.reply, /^421 /, 'first contact talking early is refused');
    t.same(await passedRows(a), [], 'and has not passed');

    const first = await connect(a.smtpPort, { ehlo: true });
    t.match(first.reply, /^220 /);
    t.ok(first.ms >= PAUSE_MS - 50, `first contact waits the pause (${Math.round(first.ms)} ms)`);
    t.same(
      await until('the pass to be written', async () => {
        const rows = await passedRows(a);
        return rows.length > 0 && rows;
      }),
      [{ address: '127.0.0.1', passed_until: new Date(a.clock.now().getTime() + 86_400_000).toISOString() }],
      'it waited and spoke SMTP: passed for a day',
    );

    // Another node on the same database, whose pause is a minute, has not seen the client: it
    // asks the database, then knows it; either way the greeting comes at once.
    const b = await bootDaemon(t, { db, databaseUrl, dataDir: a.dataDir, env: { ...env, POSTERN_SMTP_GREETING_DELAY: '60s' } });
    for (const how of ['from the database', 'from memory']) {
      const other = await connect(b.smtpPort);
      t.match(other.reply, /^220 /);
      t.ok(other.ms < LONG_PAUSE_MS, `another node greets it without its pause, ${how} (${Math.round(other.ms)} ms)`);
    }

    // A day later the pass has run out: the pause, and its early-talker check, are back.
    a.clock.advance(86_400_000 + 1000);
    const later = await connect(a.smtpPort, { early: true });
    t.match(later.reply, /^421 /, 'a client whose pass ran out is paused again');
    t.same(await a.app.runDailyJobs(a.clock.now()).then((ran) => ran.includes('purge-passed-smtp-clients')), true);
    t.same(await passedRows(a), [], 'the daily purge deletes passes that ran out');
  });
}

t.test('smtp.greetingPassTtl 0 pauses every connection', async (t) => {
  const d = await bootDaemon(t, { env: { ...env, POSTERN_SMTP_GREETING_PASS_TTL: '0ms' } });
  await connect(d.smtpPort, { ehlo: true });
  const again = await connect(d.smtpPort, { early: true });
  t.match(again.reply, /^421 /, 'the same client talking early is still refused');
  t.same(await passedRows(d), []);
});
