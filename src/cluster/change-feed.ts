// One event stream for a cluster on PostgreSQL: what one node changes, every node's live tails
// see, and every node's routing cache forgets. After its commit a node announces each message
// change by reference — the message id, the status it moved to and the length of its timeline
// then — on the channel `postern_changes` (NOTIFY), batched every few milliseconds into payloads
// under PostgreSQL's 8000-byte limit. Every other node LISTENs on a connection of its own, reads
// the rows back in one query per batch and hands each change to its watchers as of that change
// (its status, its timeline up to that entry), so a tail sees every step in order, not only the
// last. Routing changes travel the same way. A notification that could not be sent (the
// connection ended under it) is sent again on a new connection, before anything newer. A node
// whose listening connection ended cannot hear what others announce until it listens again; it
// then asks for everything changed since a little before it lost the connection (`onResumed`),
// so a tail that stayed open across a database restart misses nothing. Nothing here is durable
// beyond that: a node that was down misses what happened meanwhile, as a tail that was not
// connected does; webhooks (the events table) are the durable path. SQLite is one node, and
// needs none of it.
import type pg from 'pg';
import { pgLib } from '../db/index.js';
import type { Logger } from '../lib/logger.js';

const CHANNEL = 'postern_changes';
const MAX_PAYLOAD = 7800;
const FLUSH_MS = 5;
/** How long a connection attempt may take; one that hangs would hold every notification behind it. */
const CONNECT_TIMEOUT_MS = 5000;
/** How long one NOTIFY may take before its connection is given up for a new one. */
const QUERY_TIMEOUT_MS = 10_000;
/** How long notifications that could not be sent are kept for a new connection; older ones are dropped. */
const KEEP_UNSENT_MS = 60_000;
const RETRY_MS = 1000;
/** How far the nodes' clocks may disagree: changes stamped this much before a lost connection are read back too. */
const CLOCK_MARGIN_MS = 5000;

/** A message change, by reference. */
export interface ChangeRef {
  /** The message's row id. */
  id: string;
  status: string;
  /** The timeline's length right after the change. */
  entries: number;
}

interface Payload {
  node: string;
  changes?: [string, string, number][];
  routing?: true;
}

export interface ChangeFeed {
  /** Announces committed message changes to the other nodes (batched). */
  changed(ref: ChangeRef): void;
  /** Announces that domains or inbound addresses changed (`domains.changed`). */
  routingChanged(): void;
  close(): Promise<void>;
}

export interface ChangeFeedDeps {
  url: string;
  nodeId: string;
  log: Logger;
  /** Another node changed these messages. */
  onChanges(refs: ChangeRef[]): void;
  /** Another node changed inbound routing. */
  onRouting(): void;
  /**
   * Listening again after the listening connection ended: what others announced since `since`
   * (ms; when the connection ended, less a margin for the nodes' clocks) may not have been heard.
   */
  onResumed(since: number): void;
  /** Wall-clock now in ms (tests inject one). */
  now?: () => number;
}

export async function createChangeFeed(deps: ChangeFeedDeps): Promise<ChangeFeed> {
  const { log } = deps;
  const now = deps.now ?? Date.now;
  let closed = false;
  let listener: pg.Client | null = null;
  const newClient = () =>
    new (pgLib().Client)({
      connectionString: deps.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      query_timeout: QUERY_TIMEOUT_MS,
    });
  // Notifications go out on a connection of their own, never waiting behind the pool's queries.
  // A connection the server ended (a restart, a failover) is replaced on the next send.
  let sender: pg.Client | null = null;
  const dropSender = (client: pg.Client) => {
    if (sender === client) sender = null;
    void client.end().catch(() => {});
  };
  async function connectedSender(): Promise<pg.Client> {
    if (sender) return sender;
    const client = newClient();
    client.on('error', (err) => {
      log.warn({ err }, 'change feed: the sending connection failed; a new one is made for the next notification');
      dropSender(client);
    });
    try {
      await client.connect();
    } catch (err) {
      void client.end().catch(() => {});
      throw err;
    }
    sender = client;
    return client;
  }
  await connectedSender();

  const receive = (msg: pg.Notification) => {
    if (msg.channel !== CHANNEL || !msg.payload) return;
    let p: Payload;
    try {
      p = JSON.parse(msg.payload) as Payload;
    } catch {
      return;
    }
    if (p.node === deps.nodeId) return;
    if (p.routing) deps.onRouting();
    if (p.changes?.length) deps.onChanges(p.changes.map(([id, status, entries]) => ({ id, status, entries })));
  };

  // Listening again after the connection failed, every second until the server answers; then
  // what was announced meanwhile is read back (`onResumed`).
  let lostAt: number | null = null;
  const relisten = () => {
    if (!closed)
      setTimeout(
        () =>
          void listen().then(
            () => {
              const since = lostAt;
              lostAt = null;
              if (since !== null && !closed) deps.onResumed(since - CLOCK_MARGIN_MS);
            },
            (err: unknown) => {
              log.warn({ err }, 'change feed: reconnect failed; trying again');
              relisten();
            },
          ),
        RETRY_MS,
      ).unref();
  };
  async function listen(): Promise<void> {
    const client = newClient();
    client.on('notification', receive);
    let failed = false;
    client.on('error', (err) => {
      if (failed) return;
      failed = true;
      lostAt ??= now();
      log.warn({ err }, 'change feed: the listening connection failed; reconnecting');
      if (listener === client) {
        listener = null;
        relisten();
      }
      void client.end().catch(() => {});
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      failed = true;
      void client.end().catch(() => {});
      throw err;
    }
    if (closed) {
      void client.end().catch(() => {});
      return;
    }
    listener = client;
  }
  await listen();

  let pending: [string, string, number][] = [];
  let routing = false;
  let timer: NodeJS.Timeout | null = null;
  let sending: Promise<void> = Promise.resolve();
  // Payloads not sent yet (the connection ended under them), oldest first, with when they were made.
  let unsent: { payload: string; at: number; tries: number }[] = [];
  let retryTimer: NodeJS.Timeout | null = null;

  async function sendUnsent(): Promise<void> {
    const cutoff = now() - KEEP_UNSENT_MS;
    const dropped = unsent.filter((u) => u.at < cutoff).length;
    if (dropped > 0) {
      log.warn({ dropped }, 'change feed: notifications older than a minute were not sent; other nodes’ tails miss them');
      unsent = unsent.slice(dropped);
    }
    while (unsent.length > 0) {
      let client: pg.Client;
      try {
        client = await connectedSender();
      } catch (err) {
        log.warn({ err }, 'change feed: cannot connect to send notifications; trying again');
        break;
      }
      try {
        await client.query('SELECT pg_notify($1, $2)', [CHANNEL, unsent[0].payload]);
        unsent.shift();
      } catch (err) {
        // The connection ended under the notification (a restart, a failover, a timeout): the
        // next attempt makes a new one. One the server refuses on fresh connections is dropped.
        dropSender(client);
        if (++unsent[0].tries >= 3) {
          log.warn({ err }, 'change feed: a notification failed three times and is dropped; other nodes’ tails miss it');
          unsent.shift();
        } else log.warn({ err }, 'change feed: a notification was not sent; sending it again on a new connection');
      }
    }
    if (unsent.length > 0 && !retryTimer && !closed) {
      retryTimer = setTimeout(() => {
        retryTimer = null;
        sending = sending.then(sendUnsent);
      }, RETRY_MS);
      retryTimer.unref();
    }
  }

  function flush(): void {
    timer = null;
    const batch = pending;
    const withRouting = routing;
    pending = [];
    routing = false;
    const payloads: string[] = [];
    let current: Payload = { node: deps.nodeId, ...(withRouting ? { routing: true as const } : {}), changes: [] };
    for (const c of batch) {
      current.changes!.push(c);
      if (JSON.stringify(current).length > MAX_PAYLOAD) {
        current.changes!.pop();
        payloads.push(JSON.stringify(current));
        current = { node: deps.nodeId, changes: [c] };
      }
    }
    payloads.push(JSON.stringify(current));
    // In order, one after the other: a message's changes reach the others in the order they
    // happened, and what could not be sent before goes first.
    const at = now();
    for (const payload of payloads) unsent.push({ payload, at, tries: 0 });
    sending = sending.then(sendUnsent);
  }
  const soon = () => {
    if (!timer && !closed) timer = setTimeout(flush, FLUSH_MS);
  };

  return {
    changed(ref) {
      pending.push([ref.id, ref.status, ref.entries]);
      soon();
    },
    routingChanged() {
      routing = true;
      soon();
    },
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      if (timer) {
        clearTimeout(timer);
        flush();
      }
      await sending;
      await Promise.all([sender?.end().catch(() => {}), listener?.end().catch(() => {})]);
    },
  };
}
