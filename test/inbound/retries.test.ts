// A message sent again (its 250 lost on the way back, or tried at another MX of the cluster) is
// stored once (docs/receiving.md, "Retries"): the same bytes with a Message-ID, from the same
// envelope sender to the same address, within `inbound.retryWindow`, get the first copy's id and
// nothing new — no row, no event, no quota. Anything else that differs is a message of its own.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { freshPostgres, testDatabases } from '../helpers/databases.js';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';

const idsIn = (reply: string) => reply.match(/rcv_\w+/g) ?? [];
const HOUR = 3_600_000;

for (const db of testDatabases()) {
  t.test(`a message sent again within the window is stored once (${db})`, async (t) => {
    const env = await setup(t, { db });
    const a = await createAddress(env, { localPart: 'inbox' });
    const b = await createAddress(env, { localPart: 'other' });
    const mail = simpleMail({ to: a.address, subject: 'Once' });
    const envelope = { from: 'alice@sender.example', to: [a.address] };
    const stored = async () => (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages as { id: string }[];
    const events = async () =>
      (await env.d.app.db.selectFrom('events').select('type').where('type', '=', 'message.received').execute()).length;

    const first = await sendRaw(env.d.smtpPort, envelope, mail);
    t.match(first, /^250 /);
    const again = await sendRaw(env.d.smtpPort, envelope, mail);
    t.match(again, /^250 /, 'the copy is accepted: the client must stop sending it');
    t.same(idsIn(again), idsIn(first), 'and answered with the id stored the first time');
    t.equal((await stored()).length, 1, 'one message stored');
    t.equal(await events(), 1, 'one message.received event');
    t.equal((await env.d.app.db.selectFrom('inbound_raw').select('id').execute()).length, 1, 'one source stored');

    // Each difference makes a message of its own.
    const otherBody = mail.replace('Hi there.', 'Hi there, again.');
    t.notSame(idsIn(await sendRaw(env.d.smtpPort, envelope, otherBody)), idsIn(first), 'same Message-ID, other bytes');
    t.notSame(
      idsIn(await sendRaw(env.d.smtpPort, { ...envelope, from: 'bob@sender.example' }, mail)),
      idsIn(first),
      'another envelope sender',
    );
    t.notSame(idsIn(await sendRaw(env.d.smtpPort, { ...envelope, to: [b.address] }, mail)), idsIn(first), 'another address');
    const noId = simpleMail({ to: a.address, subject: 'Alert' }).replace(/Message-ID: [^\r]*\r\n/, '');
    const alerts = [await sendRaw(env.d.smtpPort, envelope, noId), await sendRaw(env.d.smtpPort, envelope, noId)];
    t.notSame(idsIn(alerts[1]), idsIn(alerts[0]), 'identical mail without a Message-ID is never taken for a retry');
    t.equal((await stored()).length, 6, 'six messages stored in all');

    // Two copies at once, on two connections: one is stored.
    const twin = simpleMail({ to: a.address, subject: 'Twins' });
    const both = await Promise.all([sendRaw(env.d.smtpPort, envelope, twin), sendRaw(env.d.smtpPort, envelope, twin)]);
    t.same(idsIn(both[0]), idsIn(both[1]), 'two copies at once: one id');
    t.equal((await stored()).length, 7);

    // After the window the same bytes are a message again, and the daily job forgets what is past it.
    env.d.clock.advance(24 * HOUR + 1000);
    const later = await sendRaw(env.d.smtpPort, envelope, mail);
    t.notSame(idsIn(later), idsIn(first), 'after the window: stored again');
    t.equal((await stored()).length, 8);
    const seen = () => env.d.app.db.selectFrom('inbound_seen').select('key').execute();
    const before = (await seen()).length;
    await env.d.app.runDailyJobs(env.d.clock.now());
    t.equal((await seen()).length, 1, `the daily job forgets the ${before - 1} keys older than the window`);
  });

  t.test(`inbound.retryWindow 0s stores every copy (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_INBOUND_RETRY_WINDOW: '0s' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    const mail = simpleMail({ to: a.address });
    const envelope = { from: 'alice@sender.example', to: [a.address] };
    const replies = [await sendRaw(env.d.smtpPort, envelope, mail), await sendRaw(env.d.smtpPort, envelope, mail)];
    t.notSame(idsIn(replies[1]), idsIn(replies[0]));
    t.equal((await env.d.app.db.selectFrom('inbound_seen').select('key').execute()).length, 0, 'nothing remembered');
  });
}

t.test(
  'two nodes on one PostgreSQL database: a message sent to both is stored once',
  { skip: !process.env.POSTERN_TEST_DATABASE_URL && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const db = await freshPostgres();
    t.teardown(() => db.drop());
    const env = await setup(t, { env: { POSTERN_DATABASE_URL: db.url } });
    const other = await bootDaemon(t, { databaseUrl: db.url, env: { POSTERN_DNS_SERVERS: env.dns.address, POSTERN_DNS_TIMEOUT: '500ms' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    const envelope = { from: 'alice@sender.example', to: [a.address] };
    for (let i = 0; i < 10; i++) {
      const mail = simpleMail({ to: a.address, subject: `Both ${i}` });
      const replies = await Promise.all([sendRaw(env.d.smtpPort, envelope, mail), sendRaw(other.smtpPort, envelope, mail)]);
      t.same(idsIn(replies[1]), idsIn(replies[0]), `message ${i}: both nodes answer with one id`);
    }
    const listed = (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages as unknown[];
    t.equal(listed.length, 10, 'ten messages stored, none twice');
  },
);
