// The node view (docs/cluster.md, "Watching them"; docs/api/nodes.md): GET /v1/nodes and the
// `postern_node_*` gauges, on SQLite and PostgreSQL. Nodes are written into the nodes table with
// beats of chosen ages (the daemon's own beat is a minute, its node timeout ten, so nothing is
// judged or removed while the test runs) and leases into the queue, and each figure is read back:
// health from the beat's age, in flight as the node wrote it, claimed counted from the leases by
// one grouped query. The `cluster` scope: an unscoped key is refused it, a key named with it is
// served; only a box owner (the CLI, a dashboard owner) may grant it. The gauges pass promtool, and
// a scrape while the node list cannot be read still answers, with the last values.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { healthOf } from '../../src/cluster/nodes.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { dashboardLogin } from '../helpers/dashboard.js';
import { testDatabases } from '../helpers/databases.js';
import { parseMetrics, promtoolCheck, scrape, total } from '../helpers/metrics.js';

const MINUTE = 60_000;
// Long enough that the daemon neither beats again nor judges another node during the test.
const TIMING = { POSTERN_CLUSTER_HEARTBEAT: '1m', POSTERN_CLUSTER_NODE_TIMEOUT: '10m' };

t.test('health from the age of the beat', async (t) => {
  const timing = { heartbeat: 2000, nodeTimeout: 8000 };
  const cases: [number, string][] = [
    [-500, 'ok'], // another host's clock a little ahead
    [0, 'ok'],
    [4000, 'ok'], // two heartbeats: one beat may be late
    [4001, 'late'],
    [8000, 'late'], // up to the node timeout
    [8001, 'gone'], // past it: presumed dead, removed at the next node's beat
    [3_600_000, 'gone'],
  ];
  for (const [age, health] of cases) t.equal(healthOf(age, timing), health, `${age} ms: ${health}`);
});

/** A node row of `age` ms, as another process would have written it. */
async function addNode(d: TestDaemon, age: number, inFlight: number, stopping = false): Promise<string> {
  const id = randomUUID();
  const at = new Date(Date.now() - age).toISOString();
  await d.app.db
    .insertInto('nodes')
    .values({
      id,
      host: `host-${age}`,
      pid: 4242,
      version: '0.0.9',
      started_at: new Date(Date.now() - 60 * MINUTE).toISOString(),
      heartbeat_at: at,
      stopping: stopping ? 1 : 0,
      in_flight: inFlight,
    })
    .execute();
  return id;
}

for (const db of testDatabases()) {
  t.test(`on ${db}: GET /v1/nodes, its scope, and the node gauges`, async (t) => {
    const d = await bootDaemon(t, { db, env: TIMING });
    const ws = await d.workspace('acme');
    const cluster = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'cluster');
    t.equal(cluster.code, 0, `the CLI grants cluster: ${cluster.stderr}`);
    t.same(cluster.json.scopes, ['cluster']);

    // Without the scope: an unscoped (full-access) key is refused, in the envelope.
    const refused = await d.request('GET', '/v1/nodes', { key: ws.live });
    t.equal(refused.status, 403, 'a full-access key does not see the nodes');
    t.match(refused.body, { error: { code: 'insufficient_scope', scope: 'cluster', message: /cluster/ } });

    // Other nodes: one beating, one late (stopping), one gone; and work leased in the queue.
    const ok = await addNode(d, 30_000, 2);
    const late = await addNode(d, 5 * MINUTE, 4, true);
    const gone = await addNode(d, 20 * MINUTE, 1);
    const later = new Date(d.clock.now().getTime() + 24 * 60 * MINUTE).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.test,
        body: { to: `user${i}@example.com`, channel: 'email', scheduledAt: later, content: { subject: 'Hi', text: 'Hello' } },
      });
      t.equal(r.status, 202);
      ids.push(r.body.id);
    }
    const lease = async (publicId: string, by: string, queued = true) =>
      d.app.db
        .updateTable('messages')
        .set({ locked_by: by, locked_until: later, ...(queued ? {} : { due_at: null }) })
        .where('public_id', '=', publicId)
        .execute();
    await lease(ids[0], `${late}.1`);
    await lease(ids[1], `${late}.1`);
    await lease(ids[2], `${late}.7`);
    await lease(ids[3], `${d.app.nodes.id}.3`);
    await lease(ids[4], `${randomUUID()}.1`); // a node no longer listed: counted for nobody listed
    await lease(ids[5], `${ok}.2`, false); // out of the queue (no due_at): not a claim
    // ids[6] is not leased.

    const r = await d.request('GET', '/v1/nodes', { key: cluster.json.secret });
    t.equal(r.status, 200, 'a key named with cluster is served');
    t.same(r.body.heartbeatMs, MINUTE);
    t.same(r.body.nodeTimeoutMs, 10 * MINUTE);
    const byId = new Map(r.body.data.map((n: { id: string }) => [n.id, n]));
    t.equal(byId.size, 4, 'this node and the three others');
    t.match(byId.get(d.app.nodes.id), {
      host: String,
      pid: process.pid,
      health: 'ok',
      stopping: false,
      self: true,
      inFlight: 0,
      claimed: 1,
    });
    t.match(byId.get(ok), { health: 'ok', stopping: false, self: false, inFlight: 2, claimed: 0, host: 'host-30000', pid: 4242 });
    t.match(byId.get(late), { health: 'late', stopping: true, self: false, inFlight: 4, claimed: 3 });
    t.match(byId.get(gone), { health: 'gone', inFlight: 1, claimed: 0 });
    t.match(r.body.data[0], { startedAt: String, heartbeatAt: String, version: String });

    // The same view for the CLI (without `self`) and the dashboard's owner.
    const listed = await d.cli('nodes');
    t.same(
      listed.json.map((n: { id: string; health: string; claimed: number }) => [n.id, n.health, n.claimed]).sort(),
      [
        [d.app.nodes.id, 'ok', 1],
        [ok, 'ok', 0],
        [late, 'late', 3],
        [gone, 'gone', 0],
      ].sort(),
      'postern nodes lists the same',
    );
    const owner = await dashboardLogin(d);
    const dash = await owner.request('GET', '/dashboard/api/nodes');
    t.equal(dash.status, 200);
    t.same(dash.body.heartbeatMs, MINUTE);
    t.match(
      dash.body.data.find((n: { id: string }) => n.id === late),
      { health: 'late', claimed: 3, inFlight: 4 },
    );

    // The gauges: every node by its id, the count of each health, cluster scoped.
    const { text, samples } = await scrape(d.metricsPort!);
    const gauge = (name: string, labels: Record<string, string>) => total(samples, name, { scope: 'cluster', ...labels });
    t.same(Object.fromEntries(['ok', 'late', 'gone'].map((h) => [h, gauge('postern_nodes', { health: h })])), { ok: 2, late: 1, gone: 1 });
    t.equal(gauge('postern_node_claimed', { node: late }), 3);
    t.equal(gauge('postern_node_claimed', { node: d.app.nodes.id }), 1);
    t.equal(gauge('postern_node_in_flight', { node: late }), 4);
    t.equal(gauge('postern_node_in_flight', { node: ok }), 2);
    const age = gauge('postern_node_heartbeat_age_seconds', { node: gone });
    t.ok(age >= 20 * 60 && age < 21 * 60, `the gone node beat ${age} s ago`);
    t.equal(samples.filter((s) => s.name === 'postern_node_claimed').length, 4, 'one series per listed node, none for an unlisted lease');
    const check = await promtoolCheck(text);
    t.equal(check.code, 0, `promtool check metrics: ${check.output}`);
    t.equal(check.output.trim(), '', 'no lint findings');

    // A node removed from the table leaves the series at the next scrape.
    await d.app.db.deleteFrom('nodes').where('id', '=', gone).execute();
    const after = (await scrape(d.metricsPort!)).samples;
    t.notOk(
      after.some((s) => s.labels.node === gone),
      'no series for a removed node',
    );
    t.equal(total(after, 'postern_nodes', { health: 'gone' }), 0, 'and gone still reported, as 0');
  });

  t.test(`on ${db}: only a box owner grants the cluster scope`, async (t) => {
    const d = await bootDaemon(t, { db, env: TIMING });
    const acme = await d.workspace('acme');
    await d.app.operators.create({ email: 'member@postern.test', password: 'member password 123', role: 'member', workspaces: [acme.id] });
    const member = await dashboardLogin(d, { email: 'member@postern.test', password: 'member password 123' }, false);
    await member.select(acme.id, 'live');
    const asked = await member.request('POST', '/dashboard/api/keys', { env: 'live', scopes: ['read', 'cluster'] });
    t.equal(asked.status, 403, 'a member may not grant cluster');
    t.match(asked.body, { error: { code: 'forbidden', scope: 'cluster', message: /box owner/ } });
    t.equal((await d.app.keys.list(acme.id)).length, 2, 'and no key was made');
    const plain = await member.request('POST', '/dashboard/api/keys', { env: 'live', scopes: ['read'] });
    t.equal(plain.status, 201, 'other scopes as before');

    const owner = await dashboardLogin(d);
    await owner.select(acme.id, 'live');
    const granted = await owner.request('POST', '/dashboard/api/keys', { env: 'live', scopes: ['cluster'] });
    t.equal(granted.status, 201, 'an owner may');
    t.same(granted.body.key.scopes, ['cluster']);
    t.equal((await d.request('GET', '/v1/nodes', { key: granted.body.secret })).status, 200, 'and the key sees the nodes');
    t.equal((await d.request('GET', '/v1/context', { key: granted.body.secret })).status, 403, 'and nothing else');

    // The key store itself refuses anyone but a box owner.
    const ws = await d.app.workspaces.bySlug('acme');
    await t.rejects(d.app.keys.create(ws, { env: 'live', scopes: 'cluster' }), { code: 'forbidden' });
    await t.resolves(d.app.keys.create(ws, { env: 'live', scopes: 'cluster' }, { boxOwner: true }));
  });
}

t.test('a scrape while the node list cannot be read answers, with the last values', async (t) => {
  const d = await bootDaemon(t, { env: TIMING });
  let away = false;
  const metrics = createMetrics({
    db: d.app.db,
    config: d.app.config,
    nodes: async () => {
      if (away) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      return d.app.nodes.list();
    },
  });
  const read = async () => parseMetrics(await metrics.registry.metrics());
  const before = await read();
  t.equal(total(before, 'postern_nodes', { health: 'ok' }), 1);
  away = true;
  const during = await read();
  t.equal(total(during, 'postern_nodes', { health: 'ok' }), 1, 'the last value, not a failed scrape');
  t.equal(total(during, 'postern_node_claimed', { node: d.app.nodes.id }), 0);
  t.equal(during.filter((s) => s.name === 'postern_nodes').length, 3, 'every health present');
});
