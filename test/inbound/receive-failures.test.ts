// A received message is answered 250 only once it is stored; when storing it fails, or the analysis
// thread verifying it dies under it, the sender gets 451 (it keeps the message and retries), nothing
// is stored, and the same message sent again is accepted (docs/architecture.md, "Receiving a
// message", step 5). Both failures are real: the database refuses the write (the table is renamed
// away under the daemon by another connection), and the thread is ended through the inspector's NodeWorker domain while it waits on a
// DNS answer for the message's SPF check, the way a debugger reaches a thread.
import dgram from 'node:dgram';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import SQLite from 'better-sqlite3';
import dnsPacket from 'dns-packet';
import pg from 'pg';
import t from 'tap';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, sendRaw, setup, simpleMail, type InboundEnv } from '../helpers/inbound.js';

/** The SMTP reply to one delivery attempt, as the sender sees it: "250 …" or "451 …". */
async function attempt(port: number, to: string, subject: string): Promise<string> {
  try {
    return await sendRaw(port, { from: 'alice@sender.example', to: [to] }, simpleMail({ to, subject }));
  } catch (err) {
    const e = err as { responseCode?: number; response?: string };
    if (!e.responseCode) throw err;
    return e.response ?? String(e.responseCode);
  }
}

/** The promise's value, or a failure naming `what` after 20 s: a call lost with its thread must not hang the test. */
function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no reply within 20 s: ${what}`)), 20_000)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function stored(env: InboundEnv): Promise<{ messages: string[]; raws: number }> {
  const list = (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages as { subject: string }[];
  const raws = await env.d.app.db
    .selectFrom('inbound_raw')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return { messages: list.map((m) => m.subject), raws: Number(raws.n) };
}

for (const db of testDatabases()) {
  t.test(`a failed database write answers 451, stores nothing, and the retry is accepted on ${db}`, async (t) => {
    const env = await setup(t, { db });
    const a = await createAddress(env, { localPart: 'inbox' });

    // Break the write with a real condition of the database: the table is renamed away under the
    // daemon by a connection of the test's own, and renamed back to undo it. (Holding SQLite's
    // write lock past busy_timeout is the other real condition; it answers the same 451, but only
    // after every statement of the daemon's main thread has waited out the timeout in turn, close
    // to two minutes: docs/testing.md, "Speed of the suite".)
    const rename = async (from: string, to: string) => {
      const sql = `ALTER TABLE ${from} RENAME TO ${to}`;
      if (db === 'sqlite') {
        const c = new SQLite(path.join(env.d.dataDir, 'postern.sqlite'));
        try {
          c.exec(sql);
        } finally {
          c.close();
        }
        return;
      }
      const client = new pg.Client({ connectionString: env.d.env.POSTERN_DATABASE_URL });
      await client.connect();
      try {
        await client.query(sql);
      } finally {
        await client.end();
      }
    };
    await rename('received_messages', 'received_messages_away');
    const restore = () => rename('received_messages_away', 'received_messages');

    const refused = await attempt(env.d.smtpPort, a.address, 'Stored on retry');
    t.match(refused, /^451 4\.3\.0 temporary failure storing the message/, 'a temporary failure: the sender keeps it');
    t.ok(
      env.d.logs.some((l) => /storing inbound message failed/.test(l)),
      'logged',
    );
    await restore();
    t.same(await stored(env), { messages: [], raws: 0 }, 'nothing of it was stored');

    const retried = await attempt(env.d.smtpPort, a.address, 'Stored on retry');
    t.match(retried, /^250 2\.0\.0 Ok: stored as rcv_/, 'the retry is accepted');
    t.same(await stored(env), { messages: ['Stored on retry'], raws: 1 }, 'stored once');
  });
}

t.test('an analysis thread that dies mid-message answers 451; the retry is accepted on a new thread', async (t) => {
  // A DNS server that answers NXDOMAIN, except that while `hold` is set it keeps the message's SPF
  // lookup unanswered: the analysis thread is then in the middle of that message.
  const socket = dgram.createSocket('udp4');
  let hold = true;
  let asked!: () => void;
  const heldQuery = new Promise<void>((resolve) => (asked = resolve));
  socket.on('message', (msg, rinfo) => {
    const query = dnsPacket.decode(msg);
    if (hold && query.questions?.some((q) => q.name.toLowerCase() === 'sender.example')) return asked();
    const answer = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags: dnsPacket.RECURSION_AVAILABLE | 3,
      questions: query.questions,
    });
    socket.send(answer, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  const env = await setup(t, {
    env: { POSTERN_DNS_SERVERS: `127.0.0.1:${socket.address().port}`, POSTERN_DNS_TIMEOUT: '10s', POSTERN_INBOUND_ANALYSIS_THREADS: '1' },
  });
  const a = await createAddress(env, { localPart: 'inbox' });

  // The inspector attaches to every thread of this process; the analysis thread is the one whose
  // workerData names DNS servers.
  const inspector = new Session();
  inspector.connect();
  t.teardown(() => inspector.disconnect());
  const threads: string[] = [];
  inspector.on('NodeWorker.attachedToWorker', ({ params }) => void threads.push(params.sessionId));
  const replies = new Map<number, (value: string) => void>();
  inspector.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
    const msg = JSON.parse(params.message) as { id: number; result?: { result?: { value?: string } } };
    replies.get(msg.id)?.(msg.result?.result?.value ?? '');
  });
  await inspector.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  let nextId = 1;
  const evaluate = (sessionId: string, expression: string): Promise<string> => {
    const id = nextId++;
    const reply = new Promise<string>((resolve) => replies.set(id, resolve));
    void inspector.post('NodeWorker.sendMessageToWorker', {
      sessionId,
      message: JSON.stringify({ id, method: 'Runtime.evaluate', params: { expression, returnByValue: true } }),
    });
    return reply;
  };
  const workerData = `JSON.stringify(process.getBuiltinModule('node:worker_threads').workerData ?? null)`;

  const first = attempt(env.d.smtpPort, a.address, 'Analysed on retry');
  await heldQuery;
  let killed = 0;
  for (const sessionId of threads) {
    const data = JSON.parse((await evaluate(sessionId, workerData)) || 'null') as { dnsServers?: string[] } | null;
    if (!data?.dnsServers) continue;
    void evaluate(sessionId, 'process.exit(1)');
    killed++;
  }
  t.equal(killed, 1, 'the analysis thread, found and ended while it held the message');
  t.match(
    await within(first, 'the message whose thread died'),
    /^451 4\.3\.0 temporary failure storing the message/,
    'the sender is told to retry',
  );
  t.same(await stored(env), { messages: [], raws: 0 }, 'nothing of it was stored');

  hold = false;
  const retried = await within(attempt(env.d.smtpPort, a.address, 'Analysed on retry'), 'the retry');
  t.match(retried, /^250 2\.0\.0 Ok: stored as rcv_/, 'the retry is accepted');
  t.same(await stored(env), { messages: ['Analysed on retry'], raws: 1 }, 'stored once');
});
