// One event stream across the nodes of a cluster on PostgreSQL (docs/cluster.md, "One event
// stream"): a tail opened on one node sees every message sent through another, each step in order
// up to its final status, whichever node delivered it. And a change of inbound routing made through
// one node (an address created) is seen by the other at once, not when its cache expires.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { freshPostgres } from '../helpers/databases.js';
import { startRemoteMx } from '../helpers/smtp-sink.js';
import { openTail } from '../helpers/tail.js';
import { until } from '../helpers/until.js';
import { createRouter } from '../../src/inbound/routing.js';

const pg = process.env.POSTERN_TEST_DATABASE_URL;
const N = 60;

t.test('a tail on one node sees every change made on the other', { skip: !pg && 'needs POSTERN_TEST_DATABASE_URL' }, async (t) => {
  const db = await freshPostgres();
  t.teardown(() => db.drop());
  const { env } = await startRemoteMx(t);
  const a = await bootDaemon(t, { databaseUrl: db.url, env });
  const b = await bootDaemon(t, { databaseUrl: db.url, env });
  const ws = await a.workspace('acme', { plan: 'custom' });

  const tail = openTail(`${a.url}/v1/messages?tail=1`, ws.live);
  t.teardown(() => tail.close());
  t.ok(await tail.until(() => tail.events.some((e) => e.comment === 'tail')), 'the tail is open on node a');

  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const r = await b.request('POST', '/v1/send-raw', {
      key: ws.live,
      body: { to: `user${i}@example.net`, channel: 'email', content: { subject: `m${i}`, text: 'hello' } },
    });
    t.equal(r.status, 202);
    ids.push(r.body.id as string);
  }
  // Node b delivers (its dispatcher is woken by its own accepts); node a only watches.
  await b.app.workers.find((w) => w.name === 'dispatcher')!.tick();
  const statuses = (id: string) => tail.events.filter((e) => e.id === id).map((e) => e.data.status as string);
  const allFinal = () => ids.every((id) => statuses(id).at(-1) === 'delivered');
  t.ok(await tail.until(allFinal), 'every message sent through node b reached its final status on node a’s tail');
  for (const id of ids.slice(0, 5)) t.same(statuses(id), ['queued', 'dispatched', 'delivered'], `${id}: each step, in order`);
  t.ok(
    ids.every((id) => {
      const s = statuses(id);
      return s[0] === 'queued' && s.at(-1) === 'delivered';
    }),
    'every message: queued first, delivered last',
  );
});

t.test(
  'a routing change made through one node is seen by the other at once',
  { skip: !pg && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const db = await freshPostgres();
    t.teardown(() => db.drop());
    const a = await bootDaemon(t, { databaseUrl: db.url });
    const b = await bootDaemon(t, { databaseUrl: db.url });
    const ws = await a.workspace('acme', { plan: 'custom' });
    // An address makes the workspace's shared domain.
    t.equal((await a.request('POST', '/v1/inbound/addresses', { key: ws.live, body: { localPart: 'support' } })).status, 201);
    // Node a's own router (the SMTP listener's), its answer for the domain cached.
    const router = createRouter({ config: a.app.config, db: a.app.db, bus: a.app.bus, clock: a.clock });
    const to = 'x@acme.in.postern.test';
    t.match(await router.resolve(to), { kind: 'mailbox', plan: 'custom' }, 'node a routes the shared domain');
    // Through node b the workspace changes plan (what its quota follows), and b says so on its bus.
    await b.app.db.updateTable('workspaces').set({ plan: 'pro' }).where('id', '=', ws.id).execute();
    b.app.bus.publish('domains.changed', null);
    // Node a's clock stands still, so its cache never ages out here: only b's word can clear it.
    const seen = await until('node a to hear of the change', async () => ((await router.resolve(to)) as { plan: string }).plan === 'pro');
    t.ok(seen, 'node a sees it without its 2 s cache running out');
  },
);
