// The message ledger: the only code that changes a message's status, its timeline and its
// lifecycle events, and that announces those changes. Every writer — accept, the dispatcher,
// cancel, DSN and complaint processing, provider callbacks, open and click recording — describes
// what happened as a Change (steps through the transition table, timeline notes, other columns,
// engagement events) and hands it here, so "parse the timeline, push, compare-and-swap, record the
// event, publish after commit" exists once.
//
// A change is written with a compare-and-swap on the status the writer read (and, for the
// dispatcher, on its lease; for a first open or click, on the column still being empty), in the
// same transaction as the `events` rows it causes, through the group commit (db/group-commit.ts).
// A change whose row moved on in between writes nothing. After the commit the ledger publishes
// `events.recorded` on the bus (the webhook deliverer wakes) and tells its watchers (live tails) of
// the message as it now is, when the status or the error changed (a deferral) or an event was
// recorded, and only when someone watches.
import type { Insertable, Transaction, Updateable } from 'kysely';
import { type BulkKind, type Database, inList, isSet, type MessageContentsTable, type MessagesTable, queriesFor } from '../db/index.js';
import type { Deps } from '../deps.js';
import { type NewEvent, recordEvent, recordEvents } from '../events/index.js';
import { AppError } from '../lib/errors.js';
import { type ContentRow, rowToMessage, type MessageRow } from './message.js';
import { insertMany, swapMany } from './ledger-many.js';
import { canMove, type Trigger } from './transitions.js';
import type { EventType } from '../contract/webhooks.js';
import type { MessageStatus } from '../contract/messages.js';
import type { Message, TimelineEntry } from '../contract/message-schemas.js';

/** SQLite's limit of bound parameters in one statement (SQLITE_MAX_VARIABLE_NUMBER since 3.32). */
const SQLITE_MAX_PARAMS = 32_766;

export type RowPatch = Omit<Updateable<MessagesTable>, 'seq' | 'id' | 'status' | 'timeline'>;

/** The lifecycle event a status has, recorded when a message reaches it. */
const EVENT_OF: Partial<Record<MessageStatus, EventType>> = {
  sent: 'message.sent',
  delivered: 'message.delivered',
  failed: 'message.failed',
  suppressed: 'message.suppressed',
  blocked: 'message.blocked',
  opted_out: 'message.opted_out',
};

type Log = Deps['log'];

/** A change ready to write: its columns and the view its events carry. */
interface Planned {
  c: Change;
  columns: Record<string, unknown>;
  view: Message | null;
  lease: string | undefined;
}

/** What happened to one message since it was read: built by its writer, written by the ledger. */
export class Change {
  /** The row as read (its status is what the write expects to find). */
  row: MessageRow;
  status: MessageStatus;
  readonly timeline: TimelineEntry[];
  patch: RowPatch = {};
  events: { type: EventType; extra?: Record<string, unknown> }[] = [];
  /** A column that must still be empty for the write to apply (first open, first click). */
  unsetColumn: 'opened_at' | 'clicked_at' | null = null;
  refused = false;
  /** How many timeline entries were already announced to the observer. */
  told: number;

  constructor(
    row: MessageRow,
    private readonly now: () => string,
    private readonly log: Log,
  ) {
    this.row = row;
    this.status = row.status;
    this.timeline = JSON.parse(row.timeline) as TimelineEntry[];
    this.told = this.timeline.length;
  }

  /** Whether the transition table lets `trigger` move the message from where it is now to `to`. */
  can(to: MessageStatus, trigger: Trigger): boolean {
    return canMove(this.status, to, trigger);
  }

  /**
   * Moves the message to `to`, with its timeline entry (the status's name unless `entry` says
   * otherwise; null adds none). A step the table does not allow is refused, logged, and makes the
   * whole change write nothing.
   */
  step(to: MessageStatus, trigger: Trigger, entry: string | null = to): boolean {
    if (!canMove(this.status, to, trigger)) {
      this.refused = true;
      this.log.warn(
        { message: this.row.public_id, from: this.status, to, trigger },
        'message transition refused: not in the transition table',
      );
      return false;
    }
    this.status = to;
    if (entry !== null) this.timeline.push({ t: this.now(), e: entry });
    return true;
  }

  /** A timeline entry that changes no status. */
  note(entry: string, at = this.now()): this {
    this.timeline.push({ t: at, e: entry });
    return this;
  }

  /** Columns written with the change (error, provider, due_at, lease, …). */
  set(patch: RowPatch): this {
    Object.assign(this.patch, patch);
    return this;
  }

  /** An engagement event (message.opened, message.clicked); its data is the message plus `extra`. */
  event(type: EventType, extra?: Record<string, unknown>): this {
    this.events.push({ type, extra });
    return this;
  }
}

/** A message's queue row and what it says, apart: the two tables an accepted message is written to. */
function split(full: ContentRow): { row: MessageRow; contents: Insertable<MessageContentsTable> } {
  const { content, attachments, ...row } = full;
  return { row, contents: { message_id: full.id, content, attachments } };
}

export interface Ledger {
  /** The status and timeline of a message accepted `at`, scheduled or to go at once. */
  open(at: string, scheduled: boolean): { status: MessageStatus; timeline: TimelineEntry[] };
  /** Inserts an accepted message in the caller's transaction (accept's, with its quota and idempotency key). */
  insert(trx: Transaction<Database>, row: ContentRow): Promise<void>;
  /** Inserts accepted messages in order (one statement on PostgreSQL), as insert() on each would. */
  insertMany(trx: Transaction<Database>, rows: ContentRow[]): Promise<void>;
  /** Announces a message inserted by a transaction that has committed. */
  inserted(row: MessageRow): void;
  /** A change to a message read earlier. */
  change(row: MessageRow): Change;
  /** Calls `listener` with each message created, moved to a new status or engaged with, after its commit. Returns the function that stops it. */
  watch(listener: (message: Message) => void): () => void;
  /** Tells the watchers of changes another node made (read back by id, each as of its change). */
  remote(refs: { id: string; status: string; entries: number }[]): Promise<void>;
  /**
   * Tells the watchers of every message changed since `since` as it is now: what another node
   * changed while this node could not hear of it (its change feed was reconnecting).
   */
  resync(since: string): Promise<void>;
  /**
   * Writes a change with a compare-and-swap on the status read (and the lease `lease` when given).
   * Returns the row as written, or null when the row moved on or the change was refused. The
   * change then continues from the written row (the dispatcher commits several times).
   */
  commit(change: Change, opts?: { lease?: string }): Promise<MessageRow | null>;
  /**
   * Reads a message, decides a change and writes it in one transaction; when the row moved on
   * between the read and the write (possible on PostgreSQL) it reads again. `decide` may throw to
   * refuse (the error reaches the caller) or return null to change nothing.
   */
  update(
    find: (trx: Transaction<Database>) => Promise<MessageRow | undefined>,
    decide: (row: MessageRow) => Change | null,
  ): Promise<Updated | null>;
  /** Where a test holds a writer to stage a race; empty in production. */
  readonly seams: LedgerSeams;
}

/**
 * Test seams. `beforeUpdateWrite` is awaited inside update()'s transaction, after the decision and
 * before its compare-and-swap write: the window in which, on PostgreSQL, another writer (the
 * dispatcher) can move the row the decision was made on. A race test holds a cancel there; on
 * SQLite the single writer makes every other write wait for it instead.
 */
export interface LedgerSeams {
  beforeUpdateWrite: ((read: MessageRow) => Promise<void>) | null;
}

export interface Updated {
  /** The row as read. */
  read: MessageRow;
  /** The row as written, or null when the decision was to change nothing. */
  written: MessageRow | null;
}

/** One committed change as an observer (the metrics) sees it: no status change when `from` equals `to`. */
export interface LedgerObservation {
  /** The row as written. */
  row: MessageRow;
  /** The status before (null for an accepted message). */
  from: MessageStatus | null;
  to: MessageStatus;
  /** The timeline entries this commit added (`deferred`, `bounced: …`, `complaint: …`). */
  entries: string[];
}

type LedgerDeps = Pick<Deps, 'db' | 'dialect' | 'writes' | 'clock' | 'ids' | 'bus' | 'log'> & {
  /** Called after each commit (metrics); must not throw or block. */
  observe?: (o: LedgerObservation) => void;
  /** Told of each change a tail would see, after its commit, for the other nodes (cluster/change-feed.ts). */
  share?: (ref: { id: string; status: string; entries: number }) => void;
};

const MAX_RACES = 5;
/** At most this many messages are told again after the change feed reconnects (the most recent are what a tail misses). */
const RESYNC_MAX = 5000;

export function createLedger(deps: LedgerDeps): Ledger {
  const { db, writes, clock, bus, log } = deps;
  const queries = queriesFor(db);
  const stamp = () => clock.now().toISOString();
  const watchers = new Set<(message: Message) => void>();
  const seams: LedgerSeams = { beforeUpdateWrite: null };
  // What the watchers were last told of each message: its timeline's length and what a tail shows.
  // A message's timeline only grows, so a view with a shorter one is older than one already told
  // and is dropped (an accept announced after the dispatcher's first commit, a change another node
  // announced arriving after this node read the message anew); the same view twice is told once.
  const told = new Map<string, { entries: number; shows: string }>();
  const TOLD_MAX = 50_000;
  const tell = (m: Message) => {
    const shows = `${m.status}|${m.error ?? ''}|${m.openedAt ?? ''}|${m.clickedAt ?? ''}`;
    const last = told.get(m.publicId);
    if (last && (m.timeline.length < last.entries || (m.timeline.length === last.entries && shows === last.shows))) return;
    told.delete(m.publicId);
    told.set(m.publicId, { entries: m.timeline.length, shows });
    if (told.size > TOLD_MAX) told.delete(told.keys().next().value!);
    for (const w of watchers) w(m);
  };
  // Changes from other nodes are read back one batch after the other, so they are told in the
  // order they were announced.
  let remoteReads: Promise<void> = Promise.resolve();
  const inOrder = (read: () => Promise<void>): Promise<void> => (remoteReads = remoteReads.then(read, read));

  const changed = (c: Change) => c.status !== c.row.status;
  // What a tail shows changed: the status, or the error while the status stays (a deferral leaves
  // the message `dispatched` and makes it deferred, which the list's `deferred` filter selects).
  const shown = (c: Change) => changed(c) || (c.patch.error !== undefined && c.patch.error !== c.row.error);
  // The events a change records: the new status's lifecycle event, then its engagement events.
  const eventsOf = (c: Change) => [...(changed(c) && EVENT_OF[c.status] ? [{ type: EVENT_OF[c.status]! }] : []), ...c.events];

  // The row as it will be, and the Message view for events and tails (built only when needed).
  function prepare(c: Change): { next: MessageRow; columns: Record<string, unknown>; view: Message | null } {
    const all: Record<string, unknown> = { ...c.patch, timeline: JSON.stringify(c.timeline) };
    if (changed(c)) all.status = c.status;
    all.updated_at ??= stamp();
    const next = { ...c.row, ...all };
    // What the write sets: a column a patch left undefined is not written.
    const columns = Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined));
    const view = eventsOf(c).length > 0 || (shown(c) && watchers.size > 0) ? rowToMessage(next) : null;
    return { next, columns, view };
  }

  // The UPDATE of a change: compiled once per shape (the set of columns and guards).
  async function write(
    trx: Transaction<Database>,
    c: Change,
    columns: Record<string, unknown>,
    view: Message | null,
    lease?: string,
  ): Promise<boolean> {
    const names = Object.keys(columns) as (keyof MessagesTable)[];
    const params: unknown[] = [...names.map((k) => columns[k]), c.row.id, c.row.status];
    if (lease !== undefined) params.push(lease);
    const build = () => {
      let q = trx
        .updateTable('messages')
        .set(Object.fromEntries(names.map((k) => [k, columns[k]])))
        .where('id', '=', c.row.id)
        .where('status', '=', c.row.status);
      if (lease !== undefined) q = q.where('locked_by', '=', lease);
      if (c.unsetColumn) q = q.where(c.unsetColumn, 'is', null);
      return q;
    };
    const shape = `messages.ledger:${names.join(',')}|${lease !== undefined ? 'lease' : ''}|${c.unsetColumn ?? ''}`;
    const r = await trx.executeQuery(queries.compiled(shape, params, build));
    if (Number(r.numAffectedRows) !== 1) return false;
    for (const e of newEvents(c, view)) await recordEvent(trx, deps, e);
    return true;
  }

  // The events rows of a written change.
  const newEvents = (c: Change, view: Message | null): NewEvent[] =>
    eventsOf(c).map((e) => ({
      workspaceId: c.row.workspace_id,
      livemode: isSet(c.row.livemode),
      type: e.type,
      data: e.extra ? { ...view, ...e.extra } : view,
    }));

  // Commits arriving together, written as one batch: on PostgreSQL with one UPDATE per shape and
  // one INSERT of their events (messages/ledger-many.ts); alone, or on SQLite, each by write().
  // Two changes of one message in a batch (not something the dispatcher makes: its commits of a
  // message wait for each other) are written one after the other, as the order matters.
  const commits: BulkKind<Planned, boolean> = {
    async runMany(trx, items) {
      const distinct = new Set(items.map((p) => p.c.row.id)).size === items.length;
      if (deps.dialect !== 'postgres' || items.length === 1 || !distinct) {
        const out: boolean[] = [];
        for (const p of items) out.push(await write(trx, p.c, p.columns, p.view, p.lease));
        return out;
      }
      const applied = await swapMany(
        trx,
        items.map(({ c, columns, lease }) => ({
          id: c.row.id,
          expect: c.row.status,
          lease,
          unsetColumn: c.unsetColumn,
          columns,
        })),
      );
      await recordEvents(
        trx,
        deps,
        items.flatMap((p, i) => (applied[i] ? newEvents(p.c, p.view) : [])),
      );
      return applied;
    },
  };

  // After the commit: wake the deliverer, tell the tails; the change continues from the new row.
  function announce(c: Change, next: MessageRow, view: Message | null): void {
    const events = eventsOf(c);
    for (const { type } of events) bus.publish('events.recorded', { type });
    if (view && (shown(c) || events.length > 0)) tell(view);
    if (deps.share && (shown(c) || events.length > 0)) deps.share({ id: next.id, status: c.status, entries: c.timeline.length });
    if (deps.observe) {
      deps.observe({ row: next, from: c.row.status, to: c.status, entries: c.timeline.slice(c.told).map((e) => e.e) });
      c.told = c.timeline.length;
    }
    c.row = next;
    c.patch = {};
    c.events = [];
    c.unsetColumn = null;
  }

  return {
    seams,

    open(at, scheduled) {
      const status: MessageStatus = scheduled ? 'scheduled' : 'queued';
      if (!canMove(null, status, 'accept')) throw new Error(`a new message cannot be ${status}`);
      const timeline: TimelineEntry[] = [{ t: at, e: 'accepted' }];
      if (scheduled) timeline.push({ t: at, e: 'scheduled' });
      return { status, timeline };
    },

    async insert(trx, full) {
      const { row, contents } = split(full);
      const { seq: _seq, ...values } = row;
      // Every column has a value (null at most), so the insert has one shape: compiled once.
      const columns = (Object.keys(values) as (keyof typeof values)[]).filter((c) => values[c] !== undefined);
      const params = columns.map((c) => values[c]);
      if (deps.dialect === 'postgres') {
        // One statement, one round trip: the row inserted by a CTE, what it says by the statement.
        const both = [...params, contents.message_id, contents.content, contents.attachments];
        await trx.executeQuery(
          queries.compiled(`messages.insert+contents:${columns.join(',')}`, both, () =>
            trx
              .with('m', (db) => db.insertInto('messages').values(values))
              .insertInto('message_contents')
              .values(contents),
          ),
        );
        return;
      }
      await trx.executeQuery(
        queries.compiled(`messages.insert:${columns.join(',')}`, params, () => trx.insertInto('messages').values(values)),
      );
      await trx.executeQuery(
        queries.compiled('message_contents.insert', [contents.message_id, contents.content, contents.attachments], () =>
          trx.insertInto('message_contents').values(contents),
        ),
      );
    },

    async insertMany(trx, full) {
      if (full.length < 2) {
        for (const row of full) await this.insert(trx, row);
        return;
      }
      const parts = full.map(split);
      if (deps.dialect === 'postgres')
        return insertMany(
          trx,
          parts.map((p) => p.row),
          parts.map((p) => p.contents),
        );
      // SQLite: multi-row VALUES, as many rows a statement as its bound-parameter limit allows;
      // rows take their seq in the order they are listed.
      const per = Math.max(1, Math.floor(SQLITE_MAX_PARAMS / Object.keys(parts[0].row).length));
      for (let i = 0; i < parts.length; i += per) {
        const slice = parts.slice(i, i + per);
        await trx
          .insertInto('messages')
          .values(slice.map(({ row: { seq: _seq, ...values } }) => values))
          .execute();
        await trx
          .insertInto('message_contents')
          .values(slice.map((p) => p.contents))
          .execute();
      }
    },

    inserted(row) {
      if (watchers.size > 0) tell(rowToMessage(row));
      deps.share?.({ id: row.id, status: row.status, entries: (JSON.parse(row.timeline) as unknown[]).length });
      deps.observe?.({ row, from: null, to: row.status, entries: [] });
    },

    change: (row) => new Change(row, stamp, log),

    watch(listener) {
      watchers.add(listener);
      return () => {
        watchers.delete(listener);
        if (watchers.size === 0) told.clear();
      };
    },

    remote(refs) {
      return inOrder(async () => {
        if (watchers.size === 0) return;
        const ids = [...new Set(refs.map((r) => r.id))];
        const rows = new Map(
          (
            await db
              .selectFrom('messages')
              .selectAll()
              .where(inList(deps.dialect, 'id', ids))
              .execute()
          ).map((r) => [r.id, r]),
        );
        for (const ref of refs) {
          const row = rows.get(ref.id);
          if (!row) continue;
          // The message as of that change: its status then, its timeline up to that entry.
          const timeline = JSON.stringify((JSON.parse(row.timeline) as TimelineEntry[]).slice(0, ref.entries));
          tell(rowToMessage({ ...row, status: ref.status as MessageStatus, timeline }));
        }
      });
    },

    resync(since) {
      return inOrder(async () => {
        if (watchers.size === 0) return;
        const rows = await db
          .selectFrom('messages')
          .selectAll()
          .where('updated_at', '>=', since)
          .orderBy('updated_at', 'desc')
          .limit(RESYNC_MAX)
          .execute();
        for (const row of rows.reverse()) tell(rowToMessage(row));
      });
    },

    async commit(c, opts = {}) {
      if (c.refused) return null;
      const { next, columns, view } = prepare(c);
      const ok = await writes.runBulk(commits, { c, columns, view, lease: opts.lease });
      if (!ok) {
        log.debug(
          { message: c.row.public_id, expectStatus: c.row.status },
          'message changed meanwhile (canceled or lease retaken); change not written',
        );
        return null;
      }
      announce(c, next, view);
      return next;
    },

    async update(find, decide) {
      for (let i = 0; i < MAX_RACES; i++) {
        const outcome = await writes.run(
          async (trx) => {
            const read = await find(trx);
            if (!read) return null;
            const c = decide(read);
            if (!c || c.refused) return { read, c: null };
            if (seams.beforeUpdateWrite) await seams.beforeUpdateWrite(read);
            const { next, columns, view } = prepare(c);
            return (await write(trx, c, columns, view)) ? { read, c, next, view } : 'raced';
          },
          { alone: true },
        );
        if (outcome === 'raced') continue;
        if (outcome === null) return null;
        if (!outcome.c) return { read: outcome.read, written: null };
        announce(outcome.c, outcome.next, outcome.view ?? null);
        return { read: outcome.read, written: outcome.next };
      }
      throw new AppError('conflict', 'the message kept changing; try again');
    },
  };
}
