// A node judges the others (releases the claims of one whose beat is older than the node timeout)
// only after it has itself been in touch with the database for a whole node timeout, beat after
// beat, each promptly (src/cluster/nodes.ts). A beat whose write waited out an outage (for a pooled
// connection, a server coming back) is no contact for that time: counted from its start, the node
// came back already "in touch" and released a live node's claims at once, whose messages were then
// delivered twice. Here the wall clock is the test's and the write's wait is the clock moving
// while the statement runs.
import t from 'tap';
import type { KyselyPlugin } from 'kysely';
import { createNodeRegistry } from '../../src/cluster/nodes.js';
import type { Deps } from '../../src/deps.js';
import { testDatabases } from '../helpers/databases.js';
import { logLines } from '../helpers/log-lines.js';
import { openMigrated } from '../helpers/migrated-database.js';

const HEARTBEAT = 2000;
const NODE_TIMEOUT = 8000;
const iso = (ms: number) => new Date(ms).toISOString();

for (const which of testDatabases()) {
  t.test(`${which}: a beat that waited out an outage is not contact`, async (t) => {
    const { db: plain } = await openMigrated(t, which);
    let clock = 0;
    // The next statement's run takes this long on the test's clock (then the wait is spent).
    let wait = 0;
    const slow: KyselyPlugin = {
      transformQuery: (args) => args.node,
      async transformResult(args) {
        clock += wait;
        wait = 0;
        return args.result;
      },
    };
    const db = plain.withPlugin(slow);
    const released: string[] = [];
    const node = createNodeRegistry({
      id: 'node-a',
      db,
      log: logLines('silent').log,
      config: { cluster: { heartbeat: HEARTBEAT, nodeTimeout: NODE_TIMEOUT } } as Deps['config'],
      releaseClaims: async (id) => (released.push(id), 0),
      countClaims: async () => new Map(),
      inFlight: () => 0,
      now: () => clock,
    });
    await node.start();
    t.teardown(() => node.stop());
    // Another node, alive: it beats with this one (its row, written as its own beats would).
    const beatOther = () =>
      plain
        .updateTable('nodes')
        .set({ heartbeat_at: iso(clock) })
        .where('id', '=', 'node-b')
        .execute();
    await plain
      .insertInto('nodes')
      .values({ id: 'node-b', host: 'b', pid: 2, version: '1', started_at: iso(0), heartbeat_at: iso(0), stopping: 0, in_flight: 0 })
      .execute();
    for (clock = HEARTBEAT; clock <= 3 * HEARTBEAT; clock += HEARTBEAT) {
      await beatOther();
      t.same(await node.beat(), [], `beat at ${clock} ms: both alive`);
    }

    // The database goes away for 25 s: this node's next beat starts at once and its write ends
    // only when the server is back; the other node's last beat was before the outage.
    clock = 4 * HEARTBEAT;
    wait = 25_000;
    t.same(await node.beat(), [], 'the beat that waited out the outage judges no one');
    t.equal(clock, 4 * HEARTBEAT + 25_000, 'the write took the outage');

    // Back in touch: both nodes beat again, and the other is kept.
    const back = clock;
    for (clock = back + HEARTBEAT; clock <= back + NODE_TIMEOUT + HEARTBEAT; clock += HEARTBEAT) {
      await beatOther();
      t.same(await node.beat(), [], `beat at +${clock - back} ms after the return`);
    }
    t.same(released, [], 'no claim of the live node released');

    // A node that does not come back is still judged, once this one has been in touch long enough.
    clock += NODE_TIMEOUT;
    for (let i = 0; i < 5; i++, clock += HEARTBEAT) await node.beat();
    t.same(released, ['node-b'], 'a node silent for the node timeout after the return is released');
  });
}
