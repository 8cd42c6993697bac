// The node view across a real cluster (docs/cluster.md, "Watching them"): two `postern serve`
// processes on one PostgreSQL database, a receiver that holds every message it gets, then one node
// SIGKILLed. GET /v1/nodes on the survivor shows each node's deliveries in flight and claimed
// messages matching what the receiver holds from it (told apart by their EHLO names), then the dead
// node `late`, then `gone` with its claims still counted, then no longer listed once its work was
// released.
//
// A survivor that is in touch with the database removes a dead node within one heartbeat of it
// becoming `gone`, too short a moment to catch reliably. So the survivor is paused (SIGSTOP) until
// the dead node's beat is older than the node timeout, as read from the database: resumed, the
// survivor's own beats have a gap, and it judges no node for a whole node timeout (the rule that
// keeps a node back from an outage from taking live work), which leaves the dead one listed as
// `gone`. Every wait is a polled condition with a bound.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { freshPostgres } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { promtoolCheck, total, type Sample } from '../helpers/metrics.js';
import { parseMetrics } from '../helpers/metrics.js';
import { readBootstrapKeys, runBin } from '../helpers/run-bin.js';
import { startSink } from '../helpers/smtp-sink.js';
import { spawnDaemon, type Spawned } from '../helpers/spawn.js';
import { until } from '../helpers/until.js';

const pgUrl = process.env.POSTERN_TEST_DATABASE_URL;
const PER_NODE = 3;
const NODE_TIMEOUT_MS = 3000;

interface NodeRow {
  id: string;
  pid: number;
  health: 'ok' | 'late' | 'gone';
  inFlight: number;
  claimed: number;
  self: boolean;
}

t.test(
  'GET /v1/nodes on the survivor: in flight and claimed as the receiver holds them, then the killed node late, gone, removed',
  { skip: !pgUrl && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const db = await freshPostgres();
    t.teardown(() => db.drop());
    let release!: () => void;
    const sink = await startSink(t, { hold: new Promise<void>((r) => (release = r)) });
    t.teardown(() => release());
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const nodes: Spawned[] = [];
    const dirs: string[] = [];
    t.teardown(async () => {
      for (const n of nodes) n.child.kill('SIGKILL');
      await Promise.all(nodes.map((n) => n.exited));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });
    const env = (dataDir: string, name: string) => ({
      POSTERN_DATABASE_URL: db.url,
      POSTERN_DATA_DIR: dataDir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      // Each node's own name, which is its EHLO name: how the receiver tells their messages apart.
      POSTERN_HOSTNAME: name,
      POSTERN_DNS_SERVERS: dns.address,
      POSTERN_DELIVERY_PORT: String(sink.port),
      // Room for every message on its own connection: none waits in line for one.
      POSTERN_DELIVERY_MAX_CONNECTIONS_PER_HOST: String(4 * PER_NODE),
      POSTERN_CLUSTER_HEARTBEAT: '500ms',
      POSTERN_CLUSTER_NODE_TIMEOUT: `${NODE_TIMEOUT_MS}ms`,
      // No pass on a timer: a node claims when its own API accepted a message (the accept wakes its
      // dispatcher), so the messages sent through each node are that node's.
      POSTERN_DISPATCHER_INTERVAL: '10m',
      POSTERN_RATE_LIMIT_SEND: '0',
      POSTERN_SENDER_CAPS_ENABLED: 'false',
      POSTERN_LOG_LEVEL: 'warn',
    });
    const start = async (name: string) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'postern-node-'));
      dirs.push(dir);
      const node = await spawnDaemon(env(dir, name));
      nodes.push(node);
      return node;
    };
    const a = await start('a.postern.test');
    const b = await start('b.postern.test');
    const live = readBootstrapKeys(dirs[0]).live;
    const created = await runBin(['key', 'create', '--workspace', 'default', '--env', 'live', '--scopes', 'cluster'], {
      env: env(dirs[0], 'a.postern.test'),
    });
    t.equal(created.code, 0, created.stderr);
    const clusterKey = (JSON.parse(created.stdout) as { secret: string }).secret;

    const api = async (node: Spawned, method: string, route: string, key: string, body?: unknown) => {
      const r = await fetch(`http://127.0.0.1:${node.http}${route}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    const listOn = async (node: Spawned): Promise<NodeRow[]> => {
      const r = await api(node, 'GET', '/v1/nodes', clusterKey);
      if (r.status !== 200) throw new Error(`GET /v1/nodes: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.data as NodeRow[];
    };
    const heldBy = (name: string) => sink.held().filter((m) => m.ehlo === name).length;

    // Each node takes the messages sent through it; the receiver holds them all.
    let n = 0;
    for (const node of [b, a]) {
      for (let i = 0; i < PER_NODE; i++) {
        const r = await api(node, 'POST', '/v1/send-raw', live, {
          to: `user${n++}@example.net`,
          channel: 'email',
          content: { subject: `m${n}`, text: 'hello' },
        });
        t.equal(r.status, 202);
      }
    }
    // A node's pass that claimed work waits for one of its slots to free before it claims again, and
    // the receiver frees none: each node delivers what its first claim took (at least the first
    // message sent through it); the rest stays queued, claimed by no one.
    await until('the receiver to hold messages from both nodes', async () =>
      heldBy('a.postern.test') > 0 && heldBy('b.postern.test') > 0 ? true : undefined,
    );

    // Each node's beat carries its deliveries in flight: read back on the survivor-to-be.
    const seen = await until('both nodes to report what the receiver holds from each', async () => {
      const held = { a: heldBy('a.postern.test'), b: heldBy('b.postern.test') };
      const list = await listOn(a);
      const byPid = (pid: number | undefined) => list.find((x) => x.pid === pid);
      const [na, nb] = [byPid(a.child.pid), byPid(b.child.pid)];
      const agree = (x: NodeRow | undefined, count: number) => x && x.inFlight === count && x.claimed === count;
      return agree(na, held.a) && agree(nb, held.b) ? { na: na!, nb: nb!, held } : undefined;
    });
    const held = seen.held;
    t.comment(`the receiver holds ${held.a} from a, ${held.b} from b, of ${2 * PER_NODE} sent`);
    t.match(seen.na, { health: 'ok', self: true, inFlight: held.a, claimed: held.a });
    t.match(seen.nb, { health: 'ok', self: false, inFlight: held.b, claimed: held.b });
    const bId = seen.nb.id;

    // The gauges on a say the same, and pass promtool.
    const scrapeA = async (): Promise<{ text: string; samples: Sample[] }> => {
      const text = await (await fetch(`http://127.0.0.1:${a.metrics}/metrics`)).text();
      return { text, samples: parseMetrics(text) };
    };
    const metrics = await scrapeA();
    t.equal(total(metrics.samples, 'postern_node_in_flight', { node: bId, scope: 'cluster' }), held.b);
    t.equal(total(metrics.samples, 'postern_node_claimed', { node: bId, scope: 'cluster' }), held.b);
    t.equal(total(metrics.samples, 'postern_nodes', { health: 'ok', scope: 'cluster' }), 2);
    const check = await promtoolCheck(metrics.text);
    t.equal(check.code, 0, `promtool check metrics: ${check.output}`);

    // b dies: its beat stops; a lists it late, its claims still counted (nothing released yet).
    b.child.kill('SIGKILL');
    await b.exited;
    const late = await until('the killed node to be late', async () => {
      const nb = (await listOn(a)).find((x) => x.id === bId);
      return nb?.health === 'late' ? nb : undefined;
    });
    t.match(late, { claimed: held.b, inFlight: held.b }, 'late: its claims held, its last count of deliveries');

    // a paused until b's beat is past the node timeout (read from the database), then resumed.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    t.teardown(() => client.end());
    a.child.kill('SIGSTOP');
    try {
      await until('the killed node’s beat to pass the node timeout', async () => {
        const row = await client.query<{ heartbeat_at: string }>('SELECT heartbeat_at FROM nodes WHERE id = $1', [bId]);
        return Date.now() - Date.parse(row.rows[0].heartbeat_at) > NODE_TIMEOUT_MS + 200 ? true : undefined;
      });
    } finally {
      a.child.kill('SIGCONT');
    }
    const gone = (await listOn(a)).find((x) => x.id === bId);
    t.match(gone, { health: 'gone', claimed: held.b }, 'gone: presumed dead, its claims not released yet');
    t.equal(
      (await scrapeA()).samples.find((s) => s.name === 'postern_nodes' && s.labels.health === 'gone')?.value,
      1,
      'postern_nodes{health="gone"}',
    );

    // Once a has beaten without a gap for a node timeout, it releases b's work and removes it.
    const after = await until('the dead node to be removed', async () => {
      const list = await listOn(a);
      return list.some((x) => x.id === bId) ? undefined : list;
    });
    t.same(
      after.map((x) => x.pid),
      [a.child.pid],
      'only the survivor is listed',
    );
    const leftWithB = await client.query<{ n: string }>(`SELECT count(*) AS n FROM messages WHERE locked_by LIKE $1`, [`${bId}.%`]);
    t.equal(Number(leftWithB.rows[0].n), 0, 'no lease of the dead node is left');
    release();
  },
);
