// The nodes of a cluster: Postern processes sharing one database. Each registers itself at start
// (id, host, pid, version), beats every `cluster.heartbeat`, marks itself `stopping` when a
// graceful stop begins and removes itself at the end. On each beat a node also looks for nodes
// whose beat is older than `cluster.nodeTimeout`: such a node crashed or lost the database, so
// the leases it held on messages are released at once (its work is taken over now, not when the
// leases run out) and it is removed. A node judges others only after it has itself been in touch
// with the database, beat after beat, for a whole `nodeTimeout`: after an outage every node's beat
// is old, and a node that came back first must not take the live work of one that has not beaten
// yet (it would be delivered twice). Liveness is wall-clock time, not the application clock
// (tests move that one by hours). The node id is also the prefix of every lease the node's
// dispatcher takes (`<id>.<claim>`), which is what lets another node release them.
//
// The node view (`GET /v1/nodes`, `postern nodes`, the dashboard, the `postern_node_*` gauges) reads
// each node's health from the age of its beat: `ok` within two heartbeats, `late` up to
// `nodeTimeout`, `gone` past it (presumed dead: the next node to beat removes it). A node writes its
// deliveries in flight into its row on every beat, since only it knows them; what it has claimed
// is counted from the queue's leases.
import { hostname } from 'node:os';
import type { NodeHealth } from '../contract/cluster-schemas.js';
import type { Deps } from '../deps.js';
import { flag, isSet } from '../db/index.js';
import { packageVersion } from '../lib/version.js';

/**
 * A node's health from the age of its last beat: `ok` within two heartbeats (one beat may be a
 * little late), `late` up to `nodeTimeout`, `gone` past it (presumed dead; about to be removed).
 */
export function healthOf(ageMs: number, timing: { heartbeat: number; nodeTimeout: number }): NodeHealth {
  if (ageMs <= 2 * timing.heartbeat) return 'ok';
  return ageMs <= timing.nodeTimeout ? 'late' : 'gone';
}

export interface NodeView {
  id: string;
  host: string;
  pid: number;
  version: string;
  startedAt: string;
  heartbeatAt: string;
  health: NodeHealth;
  stopping: boolean;
  /** This process. */
  self: boolean;
  /** Deliveries under way on the node, as of its last beat. */
  inFlight: number;
  /** Queue messages the node holds a lease on (claimed, waiting or in flight). */
  claimed: number;
}

export interface NodeRegistry {
  readonly id: string;
  /** Registers this node and starts beating. */
  start(): Promise<void>;
  /** Says this node is stopping (no new work). */
  stopping(): Promise<void>;
  /** Stops beating and removes this node. */
  stop(): Promise<void>;
  list(): Promise<NodeView[]>;
  /** One beat: this node's heartbeat, then the release of dead nodes' work. Returns the ids released. */
  beat(): Promise<string[]>;
  /**
   * This node's share of a cap the cluster splits between its live nodes (connections per
   * destination host): the shares of all nodes add up to the cap, each at least 1.
   */
  shareOf(cap: number): number;
}

export interface NodeRegistryDeps extends Pick<Deps, 'db' | 'log' | 'config'> {
  id: string;
  /** Releases the leases a dead node held (outbound/queue.ts); returns how many. */
  releaseClaims(nodeId: string): Promise<number>;
  /** The queue messages each node holds a lease on, by node id (outbound/queue.ts). */
  countClaims(): Promise<Map<string, number>>;
  /** This node's deliveries under way now (the dispatcher's), written with each beat. */
  inFlight(): number;
  /** Wall-clock now, in ms (tests inject one). */
  now?: () => number;
}

export function createNodeRegistry(deps: NodeRegistryDeps): NodeRegistry {
  const { db, log } = deps;
  const now = deps.now ?? Date.now;
  const { heartbeat, nodeTimeout } = deps.config.cluster;
  let timer: NodeJS.Timeout | null = null;
  const iso = (ms: number) => new Date(ms).toISOString();
  // Since when this node's own beats have gone through without a gap longer than two beats (a
  // failed beat, the database away, a stalled event loop start it again), each promptly: a beat
  // whose write waited longer than a heartbeat (for a pooled connection while the database was
  // away, a server slow to answer) was no contact for that time either. Measured when the write
  // ended: timed from its start, a write that waited out an outage would count as contact
  // throughout it, and this node would judge the others dead the moment it came back.
  let lastBeat: number | null = null;
  let inTouchSince: number | null = null;
  // A beat still waiting for the database: the next is skipped rather than queued behind it, so
  // beats never pile up in an outage, nor land out of order (an older time over a newer one).
  let beating = false;

  // The live nodes' ids in a fixed order, as of the last beat: what a split cap is divided by.
  let live: string[] = [deps.id];
  async function readLive(): Promise<void> {
    const rows = await db
      .selectFrom('nodes')
      .select('id')
      .where('heartbeat_at', '>=', iso(now() - nodeTimeout))
      .orderBy('id')
      .execute();
    const ids = rows.map((r) => r.id);
    if (!ids.includes(deps.id)) ids.push(deps.id);
    ids.sort();
    const changed = ids.length !== live.length || ids.some((id, i) => id !== live[i]);
    live = ids;
    // Said once per change, after the shares use it: a node joining or leaving is visible in each
    // node's log (and a test waits for it instead of for a beat to pass).
    if (changed) log.info({ node: deps.id, live: ids.length }, 'the live nodes changed; split caps are shared between them');
  }

  async function releaseDead(at: number): Promise<string[]> {
    if (inTouchSince === null || at - inTouchSince < nodeTimeout) return [];
    const dead = await db
      .selectFrom('nodes')
      .select(['id', 'host', 'pid', 'heartbeat_at'])
      .where('heartbeat_at', '<', iso(now() - nodeTimeout))
      .where('id', '!=', deps.id)
      .execute();
    for (const node of dead) {
      const released = await deps.releaseClaims(node.id);
      await db.deleteFrom('nodes').where('id', '=', node.id).where('heartbeat_at', '=', node.heartbeat_at).execute();
      log.warn(
        { node: node.id, host: node.host, pid: node.pid, lastBeat: node.heartbeat_at, released },
        'a node stopped beating; its claimed messages are released to the others',
      );
    }
    return dead.map((n) => n.id);
  }

  const registry: NodeRegistry = {
    id: deps.id,
    async start() {
      const at = iso(now());
      await db
        .insertInto('nodes')
        .values({
          id: deps.id,
          host: hostname(),
          pid: process.pid,
          version: packageVersion(),
          started_at: at,
          heartbeat_at: at,
          stopping: 0,
          in_flight: deps.inFlight(),
        })
        .execute();
      lastBeat = inTouchSince = Date.parse(at);
      await readLive();
      timer = setInterval(() => {
        if (beating) return;
        beating = true;
        registry
          .beat()
          .catch((err: unknown) => log.warn({ err }, 'node heartbeat failed; trying again at the next beat'))
          .finally(() => (beating = false));
      }, heartbeat);
      timer.unref();
    },
    async beat() {
      const ms = now();
      const at = iso(ms);
      const mine = await db
        .updateTable('nodes')
        .set({ heartbeat_at: at, in_flight: deps.inFlight() })
        .where('id', '=', deps.id)
        .executeTakeFirst();
      const done = now();
      if (lastBeat === null || ms - lastBeat > 2 * heartbeat || done - ms > heartbeat) inTouchSince = done;
      lastBeat = done;
      if (Number(mine.numUpdatedRows) === 0) {
        // Presumed dead by another node (a long pause, the database out of reach): back in the list.
        // Its claims were released; the fencing of every write keeps it from recording over them.
        log.warn({ node: deps.id }, 'this node was presumed dead by another and registers again');
        await db
          .insertInto('nodes')
          .values({
            id: deps.id,
            host: hostname(),
            pid: process.pid,
            version: packageVersion(),
            started_at: at,
            heartbeat_at: at,
            stopping: 0,
            in_flight: deps.inFlight(),
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      }
      const released = await releaseDead(done);
      await readLive();
      return released;
    },
    shareOf(cap) {
      const rank = live.indexOf(deps.id);
      const share = Math.floor(cap / live.length) + (rank < cap % live.length ? 1 : 0);
      return Math.max(1, share);
    },
    async stopping() {
      await db
        .updateTable('nodes')
        .set({ stopping: flag(true) })
        .where('id', '=', deps.id)
        .execute()
        .catch(() => {});
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await db.deleteFrom('nodes').where('id', '=', deps.id).execute();
    },
    async list() {
      const [rows, claims] = await Promise.all([db.selectFrom('nodes').selectAll().orderBy('started_at').execute(), deps.countClaims()]);
      const at = now();
      return rows.map((r) => ({
        id: r.id,
        host: r.host,
        pid: Number(r.pid),
        version: r.version,
        startedAt: r.started_at,
        heartbeatAt: r.heartbeat_at,
        health: healthOf(at - Date.parse(r.heartbeat_at), { heartbeat, nodeTimeout }),
        stopping: isSet(r.stopping),
        self: r.id === deps.id,
        inFlight: Number(r.in_flight),
        claimed: claims.get(r.id) ?? 0,
      }));
    },
  };
  return registry;
}

/**
 * The nodes whose beat is newer than `nodeTimeout` (stopping ones included): processes that hold
 * the database, which a restore must not replace under them.
 */
export async function liveNodes(db: Deps['db'], nodeTimeout: number, now: number): Promise<{ host: string; pid: number }[]> {
  const rows = await db
    .selectFrom('nodes')
    .select(['host', 'pid'])
    .where('heartbeat_at', '>=', new Date(now - nodeTimeout).toISOString())
    .orderBy('started_at')
    .execute();
  return rows.map((r) => ({ host: r.host, pid: Number(r.pid) }));
}
