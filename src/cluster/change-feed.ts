// One event stream for a cluster on PostgreSQL: what one node changes, every node's live tails
// see, and every node's routing cache forgets. After its commit a node announces each message
// change by reference — the message id, the status it moved to and the length of its timeline
// then — on the channel `postern_changes` (NOTIFY), batched every few milliseconds into payloads
// under PostgreSQL's 8000-byte limit. Every other node LISTENs on a connection of its own, reads
// the rows back in one query per batch and hands each change to its watchers as of that change
// (its status, its timeline up to that entry), so a tail sees every step in order, not only the
// last. Routing changes travel the same way. Nothing here is durable: a node that was down
// misses what happened meanwhile, as a tail that was not connected does; webhooks (the events
// table) are the durable path. SQLite is one node, and needs none of it.
import type pg from 'pg';
import { pgLib } from '../db/database.js';
import type { Logger } from '../lib/logger.js';

const CHANNEL = 'postern_changes';
const MAX_PAYLOAD = 7800;
const FLUSH_MS = 5;

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
}

export async function createChangeFeed(deps: ChangeFeedDeps): Promise<ChangeFeed> {
  const { log } = deps;
  let closed = false;
  let listener: pg.Client | null = null;
  // Notifications go out on a connection of their own, never waiting behind the pool's queries.
  // A connection the server ended (a restart, a failover) is replaced on the next send.
  let sender: pg.Client | null = null;
  async function connectedSender(): Promise<pg.Client> {
    if (sender) return sender;
    const client = new (pgLib().Client)({ connectionString: deps.url });
    client.on('error', (err) => {
      log.warn({ err }, 'change feed: the sending connection failed; a new one is made for the next notification');
      if (sender === client) sender = null;
      void client.end().catch(() => {});
    });
    await client.connect();
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

  // Listening again after the connection failed, every second until the server answers.
  const relisten = () => {
    if (!closed)
      setTimeout(
        () =>
          void listen().catch((err: unknown) => {
            log.warn({ err }, 'change feed: reconnect failed; trying again');
            relisten();
          }),
        1000,
      ).unref();
  };
  async function listen(): Promise<void> {
    const client = new (pgLib().Client)({ connectionString: deps.url });
    client.on('notification', receive);
    client.on('error', (err) => {
      log.warn({ err }, 'change feed: the listening connection failed; reconnecting');
      listener = null;
      void client.end().catch(() => {});
      relisten();
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    listener = client;
  }
  await listen();

  let pending: [string, string, number][] = [];
  let routing = false;
  let timer: NodeJS.Timeout | null = null;
  let sending: Promise<void> = Promise.resolve();

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
    // In order, one after the other: a message's changes reach the others in the order they happened.
    sending = sending.then(async () => {
      for (const payload of payloads) {
        try {
          await (await connectedSender()).query('SELECT pg_notify($1, $2)', [CHANNEL, payload]);
        } catch (err) {
          log.warn({ err }, 'change feed: a notification was not sent; other nodes’ tails miss it');
        }
      }
    });
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
      if (timer) {
        clearTimeout(timer);
        flush();
      }
      await sending;
      await Promise.all([sender?.end().catch(() => {}), listener?.end().catch(() => {})]);
    },
  };
}
