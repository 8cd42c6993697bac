// Accepting a send. Everything a 202 promises is decided and committed here, in one transaction:
// the plan quota counter, the idempotency key and the message row with its `accepted` timeline
// entry. Nothing is delivered here; the dispatcher picks the row up from `due_at`.
//
// Idempotency: (workspace, environment, key) is the primary key of message_idempotency and is
// checked and inserted (ON CONFLICT DO NOTHING) in the same transaction as the message. A concurrent repeat blocks on the
// unique index (PostgreSQL) or on the single writer (SQLite) and then finds the original, so two
// racing requests can never both create a message. Keys expire after 24 hours.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { OutboundMessage } from '../channel.js';
import { type BulkKind, type Database, flag, type Flag, queriesFor } from '../db/index.js';
import type { Deps } from '../deps.js';
import { AppError, invalidBody, isAppError, type Issue } from '../lib/errors.js';
import { stringHash } from '../lib/string-hash.js';
import { type ContentRow, type Ledger, type MessageRow, metadataText, rowToOutbound, searchText } from '../messages/index.js';
import { checkTemplates } from '../templates/index.js';
import { planLimits } from '../workspaces/index.js';
import { channelIssues, readSendBody, shapeIssues } from './send-input.js';
import type { Channel, ChannelContent } from '../contract/channels.js';
import type { ErrorCode } from '../contract/vocabulary.js';
import type { BatchMode } from '../contract/sending-schemas.js';

const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/** Template resolution, provided by the templates area (src/templates/store.ts). */
export interface TemplateResolver {
  resolveForSend(
    workspaceId: string,
    slug: string,
    opts: { livemode: boolean; version?: number },
  ): Promise<{ slug: string; channel: Channel; versionNumber: number; contentJson: string }>;
}

/** Who is sending: the slice of an authenticated principal that accept needs. */
export interface Sender {
  workspace: { id: string; plan: string };
  livemode: boolean;
}

export interface AcceptResponse {
  id: string;
  status: 'queued' | 'scheduled';
  livemode: boolean;
}

/** An accept-time check (sender caps, …): throw an AppError to refuse the send. Runs before insert. */
export type AcceptCheck = (ctx: { message: OutboundMessage; plan: string; scheduledAt: string | null }) => Promise<void>;

export interface AcceptDeps extends Pick<Deps, 'config' | 'db' | 'dialect' | 'clock' | 'ids' | 'writes'> {
  ledger: Ledger;
  templates: TemplateResolver;
  checks: AcceptCheck[];
  /** Called after commit with the new row. */
  accepted(row: MessageRow): void;
  /** The usage count's shard this node adds to when no quota applies (0 when absent). */
  usageShard?: number;
}

/** Thrown inside the accept transaction when an idempotency key was used before: the original answer (a batch's, or one send's). */
class Repeat extends Error {
  constructor(
    readonly response: AcceptResponse | BatchResponse,
    readonly batch = false,
  ) {
    super('idempotent repeat');
  }
}

/** An idempotency key (a send's, a batch's) is 1-255 characters. */
function checkKey(key: string): void {
  if (key.length === 0 || key.length > 255) throw new AppError('invalid_request', 'Idempotency-Key must be 1-255 characters');
}

/** Refusals an item of a batch can have on its own; anything else (the database away, …) refuses the request. */
const ITEM_REFUSALS = new Set<ErrorCode>(['invalid_body', 'invalid_request', 'plan_limit', 'quota_exceeded']);

/** One item's answer in a batch: accepted (or the original of a repeat), or refused with the error a single send would get. */
export type BatchItemResult = AcceptResponse | { error: { code: ErrorCode; message: string } & Record<string, unknown> };

export interface BatchResponse {
  data: BatchItemResult[];
}

/** An atomic batch's refusal: every item's issues, with paths under `messages.{i}`; else the first other refusal. */
function batchRefusal(refusals: { index: number; err: AppError }[]): AppError {
  const other = refusals.find(({ err }) => err.code !== 'invalid_body');
  if (other)
    return new AppError(other.err.code, `messages.${other.index}: ${other.err.message}`, { ...other.err.extra, index: other.index });
  return invalidBody(
    refusals.flatMap(({ index, err }) =>
      (err.extra.issues as Issue[]).map((i) => ({
        path: i.path ? `messages.${index}.${i.path}` : `messages.${index}`,
        message: i.message,
      })),
    ),
  );
}

/** A message ready to commit, with its idempotency key and its answer. */
interface Accepted {
  row: ContentRow;
  key: string | null;
  response: AcceptResponse;
}

/** Shards a node without a quota may count in (1-15; shard 0 is the quota's, and SQLite's). */
const NODE_SHARDS = 15;

/** The usage shard of a node of the cluster: spread by its id, so two nodes rarely share one. */
export function usageShardOf(nodeId: string): number {
  return 1 + (stringHash(nodeId) % NODE_SHARDS);
}

function monthOf(d: Date): string {
  return d.toISOString().slice(0, 7);
}

export function createAccept(deps: AcceptDeps) {
  const { db, clock, ids, ledger } = deps;
  const usageShard = deps.usageShard ?? 0;

  // Compiled once: every SMTP submission carries a key (its Message-ID), read before and in the commit.
  const queries = queriesFor(db);
  const keyQuery = (q: Kysely<Database>, workspaceId: string, livemode: Flag, key: string) =>
    queries.compiled('accept.idempotency', [workspaceId, livemode, key], () =>
      q
        .selectFrom('message_idempotency')
        .select(['response', 'expires_at'])
        .where('workspace_id', '=', workspaceId)
        .where('livemode', '=', livemode)
        .where('key', '=', key),
    );

  async function findRepeat(sender: Sender, key: string): Promise<AcceptResponse | null> {
    const row = (await db.executeQuery(keyQuery(db, sender.workspace.id, flag(sender.livemode), key))).rows[0];
    if (!row || row.expires_at <= clock.now().toISOString()) return null;
    return JSON.parse(row.response) as AcceptResponse;
  }

  /** Validates and resolves the body into the row to insert; throws invalid_body listing every issue. */
  async function prepare(sender: Sender, raw: unknown, opts: { raw: boolean; idempotencyKey: string | null }): Promise<ContentRow> {
    // Shape problems are reported together with those the rest of the body still lets us see.
    const { body, issues, refused } = readSendBody(raw);
    const shapeCount = issues.length;
    const now = clock.now();
    issues.push(...shapeIssues(body, { raw: opts.raw, now }));

    let channel: Channel | undefined = body.channel;
    const content: ChannelContent | undefined = body.content as ChannelContent | undefined;
    let templateVersion: number | null = null;
    let resolvedSlug: string | null = null;
    // A template's content goes into the row as it is stored: accept reads nothing in it.
    let templateJson: string | null = null;
    if (body.template !== undefined && body.content === undefined) {
      try {
        const resolved = await deps.templates.resolveForSend(sender.workspace.id, body.template, {
          livemode: sender.livemode,
          version: body.version,
        });
        if (body.channel !== undefined && body.channel !== resolved.channel) {
          issues.push({ path: 'channel', message: `template ${resolved.slug} is a ${resolved.channel} template` });
        }
        channel = resolved.channel;
        templateJson = resolved.contentJson;
        templateVersion = resolved.versionNumber;
        resolvedSlug = resolved.slug;
      } catch (err) {
        // A template that cannot be sent is an issue of the body, listed with the others.
        if (isAppError(err) && err.code === 'invalid_body') issues.push(...(err.extra.issues as Issue[]));
        else throw err;
      }
    }
    if (channel) issues.push(...channelIssues(channel, body));
    if (channel && content && body.content !== undefined && body.interpolate)
      issues.push(...checkTemplates(channel, content as unknown as Record<string, unknown>));
    // A field the schema refused is reported once, by the schema, not again as missing.
    const reported = issues.filter((issue, i) => i < shapeCount || !refused.has(issue.path.split('.')[0]));
    if (reported.length) throw invalidBody(reported);

    const publicId = ids.publicId('msg');
    const createdAt = now.toISOString();
    const scheduledAt = body.scheduledAt ? new Date(body.scheduledAt).toISOString() : null;
    const { status, timeline } = ledger.open(createdAt, scheduledAt !== null);
    const templateSlug = body.content === undefined ? resolvedSlug : null;
    return {
      seq: 0,
      id: ids.uuid(),
      public_id: publicId,
      workspace_id: sender.workspace.id,
      livemode: flag(sender.livemode),
      channel: channel!,
      status,
      recipient: body.to,
      template_slug: templateSlug,
      template_version: templateVersion,
      pinned_version: templateSlug ? (body.version ?? null) : null,
      content: templateJson ?? JSON.stringify(content),
      interpolate: flag(body.content !== undefined && body.interpolate === true),
      vars: JSON.stringify(body.vars),
      metadata: JSON.stringify(body.metadata),
      metadata_text: metadataText(body.metadata),
      search_text: searchText(publicId, body.to, templateSlug, body.metadata),
      from_override: body.from ?? null,
      from_name_override: body.fromName ?? null,
      cc: JSON.stringify(body.cc ?? []),
      bcc: JSON.stringify(body.bcc ?? []),
      reply_to: body.replyTo ?? null,
      attachments: JSON.stringify(body.attachments ?? []),
      provider: null,
      provider_connection_id: null,
      provider_message_id: null,
      latency_ms: null,
      opened_at: null,
      clicked_at: null,
      error: null,
      timeline: JSON.stringify(timeline),
      created_at: createdAt,
      scheduled_at: scheduledAt,
      idempotency_key: opts.idempotencyKey,
      attempts: 0,
      due_at: scheduledAt ?? createdAt,
      locked_until: null,
      locked_by: null,
      updated_at: createdAt,
    };
  }

  // What one acceptMany commits: its rows, and what the quota and the keys are counted against.
  interface Pending {
    workspaceId: string;
    livemode: boolean;
    plan: string;
    /** Live messages per month; 0: unlimited. */
    quota: number;
    month: string;
    now: string;
    expiresAt: string;
    rows: Accepted[];
    /** A batch's idempotency key and its whole answer, claimed before its rows. */
    batch?: { key: string; response: string };
  }

  const earlierIn = async (trx: Transaction<Database>, p: Pending, row: MessageRow, key: string) => {
    const existing = (await trx.executeQuery(keyQuery(trx, row.workspace_id, row.livemode, key))).rows[0];
    if (existing && existing.expires_at > p.now) throw new Repeat(JSON.parse(existing.response));
    return existing;
  };

  // The key first: a concurrent repeat waits here on the unique key (PostgreSQL) until the
  // original commits and then answers as it did, before the quota could refuse it.
  async function claimKey(trx: Transaction<Database>, p: Pending, { row, key, response }: Accepted): Promise<void> {
    if (key === null) return;
    const values = {
      workspace_id: row.workspace_id,
      livemode: row.livemode,
      key,
      message_id: row.id,
      response: JSON.stringify(response),
      expires_at: p.expiresAt,
    };
    const ins = await trx.executeQuery(
      queries.compiled('accept.idempotency.insert', Object.values(values), () =>
        trx
          .insertInto('message_idempotency')
          .values(values)
          .onConflict((oc) => oc.columns(['workspace_id', 'livemode', 'key']).doNothing()),
      ),
    );
    if (Number(ins.numAffectedRows ?? 0) > 0) return;
    // Taken meanwhile by a concurrent request (PostgreSQL waits for it to commit), or expired.
    await earlierIn(trx, p, row, key);
    await trx
      .updateTable('message_idempotency')
      .set({ message_id: row.id, response: JSON.stringify(response), expires_at: p.expiresAt })
      .where('workspace_id', '=', row.workspace_id)
      .where('livemode', '=', row.livemode)
      .where('key', '=', key)
      .where('expires_at', '<=', p.now)
      .execute();
  }

  async function findBatchRepeat(sender: Sender, key: string): Promise<BatchResponse | null> {
    const row = await batchKeyQuery(db, sender.workspace.id, flag(sender.livemode), key).executeTakeFirst();
    if (!row || row.expires_at <= clock.now().toISOString()) return null;
    return JSON.parse(row.response) as BatchResponse;
  }

  const batchKeyQuery = (q: Kysely<Database>, workspaceId: string, livemode: Flag, key: string) =>
    q
      .selectFrom('batch_idempotency')
      .select(['response', 'expires_at'])
      .where('workspace_id', '=', workspaceId)
      .where('livemode', '=', livemode)
      .where('key', '=', key);

  // As claimKey, for a batch's key: a concurrent repeat waits on it and then answers as the original did.
  async function claimBatchKey(trx: Transaction<Database>, p: Pending, batch: { key: string; response: string }): Promise<void> {
    const workspaceId = p.workspaceId;
    const livemode = flag(p.livemode);
    const ins = await trx
      .insertInto('batch_idempotency')
      .values({ workspace_id: workspaceId, livemode, key: batch.key, response: batch.response, expires_at: p.expiresAt })
      .onConflict((oc) => oc.columns(['workspace_id', 'livemode', 'key']).doNothing())
      .executeTakeFirst();
    if (Number(ins.numInsertedOrUpdatedRows ?? 0) > 0) return;
    const existing = await batchKeyQuery(trx, workspaceId, livemode, batch.key).executeTakeFirst();
    if (existing && existing.expires_at > p.now) throw new Repeat(JSON.parse(existing.response) as BatchResponse, true);
    await trx
      .updateTable('batch_idempotency')
      .set({ response: batch.response, expires_at: p.expiresAt })
      .where('workspace_id', '=', workspaceId)
      .where('livemode', '=', livemode)
      .where('key', '=', batch.key)
      .execute();
  }

  // Live messages are counted on every plan (the overview's usage, unlimited plans too); test mode
  // never reaches a provider and is not counted. Only a quota can refuse: `n` messages fit when
  // the month's count plus `n` stays within it, as `n` counts of one each would.
  //
  // The month's count is the sum of its shards (migration 0041). Without a quota a node adds to
  // its own shard, so accepts on two nodes never wait for each other's commits on one row. With
  // a quota the count goes to shard 0, and the check adds the other shards to it: shard 0's row
  // lock makes the checks of one workspace take turns, so two of them cannot both fit the last
  // message (a shard another node adds to meanwhile belongs to an unlimited plan's accept, which
  // only a plan change in the middle of it can interleave with).
  async function countUsage(trx: Transaction<Database>, workspaceId: string, p: Pending, n: number): Promise<void> {
    if (p.quota === 0) {
      await trx
        .insertInto('message_usage')
        .values({ workspace_id: workspaceId, month: p.month, shard: usageShard, count: n })
        .onConflict((oc) =>
          oc.columns(['workspace_id', 'month', 'shard']).doUpdateSet((eb) => ({ count: eb('message_usage.count', '+', n) })),
        )
        .execute();
      return;
    }
    await trx
      .insertInto('message_usage')
      .values({ workspace_id: workspaceId, month: p.month, shard: 0, count: 0 })
      .onConflict((oc) => oc.columns(['workspace_id', 'month', 'shard']).doNothing())
      .execute();
    const others = sql<number>`(SELECT coalesce(sum(o.count), 0) FROM message_usage o
      WHERE o.workspace_id = ${workspaceId} AND o.month = ${p.month} AND o.shard <> 0)`;
    const up = await trx
      .updateTable('message_usage')
      .set((eb) => ({ count: eb('count', '+', n) }))
      .where('workspace_id', '=', workspaceId)
      .where('month', '=', p.month)
      .where('shard', '=', 0)
      .where(sql<boolean>`message_usage.count + ${others} <= ${p.quota - n}`)
      .executeTakeFirst();
    if (Number(up.numUpdatedRows) === 0) {
      throw new AppError('quota_exceeded', `the ${p.plan} plan's quota of ${p.quota} messages per month is used up`, { limit: p.quota });
    }
  }

  // Accepts that commit together (one group-commit batch, or a batch send). The plain path, for a
  // single message, is each message in turn: its key, its count, its row. For several, the keys
  // come first, then one count per workspace and quota, then the rows in as few INSERTs as the
  // dialect allows (messages/ledger-many.ts on PostgreSQL, where each statement is a round trip;
  // multi-row VALUES on SQLite, where each is a call into the engine). Held to the plain path by
  // test/outbound/accept-many.test.ts over generated sends, on both.
  const commits: BulkKind<Pending, void> = {
    async runMany(trx, items) {
      for (const p of items) if (p.batch) await claimBatchKey(trx, p, p.batch);
      const all = items.flatMap((p) => p.rows.map((r) => ({ p, r })));
      // The usage count comes last, just before the commit: its row is the one every accept of
      // the workspace writes, so its lock is held for the commit alone and not across the rows'
      // insertion (with several nodes, or several transactions at once, accepts queued on it).
      if (all.length < 2) {
        for (const { p, r } of all) {
          await claimKey(trx, p, r);
          await ledger.insert(trx, r.row);
          if (p.livemode) await countUsage(trx, r.row.workspace_id, p, 1);
        }
        return items.map(() => undefined);
      }
      for (const { p, r } of all) await claimKey(trx, p, r);
      await ledger.insertMany(
        trx,
        all.map(({ r }) => r.row),
      );
      const counts = new Map<string, { workspaceId: string; p: Pending; n: number }>();
      for (const { p, r } of all) {
        if (!p.livemode) continue;
        const at = `${r.row.workspace_id}|${p.month}|${p.quota}`;
        const count = counts.get(at) ?? { workspaceId: r.row.workspace_id, p, n: 0 };
        count.n++;
        counts.set(at, count);
      }
      for (const { workspaceId, p, n } of counts.values()) await countUsage(trx, workspaceId, p, n);
      return items.map(() => undefined);
    },
  };

  /** One send to accept: its body, whether it is a raw send, and its idempotency key. */
  interface Item {
    body: unknown;
    raw: boolean;
    idempotencyKey?: string | null;
  }

  /**
   * Validates and checks each send into the row to commit, or finds the original of a repeat.
   * `refused` is told of each send refused for a reason of its own (invalid, over a plan's limit):
   * it throws to refuse them all, or returns to leave that send out. Answers are in order: a
   * repeat's original, a refusal's error, or null for a row to commit.
   */
  async function prepareAll(
    sender: Sender,
    items: Item[],
    refused: (index: number, err: AppError) => void,
  ): Promise<{ answers: (BatchItemResult | null)[]; rows: Accepted[] }> {
    const answers: (BatchItemResult | null)[] = [];
    const rows: Accepted[] = [];
    const keyed = new Map<string, number>();
    for (const [index, item] of items.entries()) {
      try {
        const key = item.idempotencyKey ?? null;
        if (key !== null) {
          checkKey(key);
          // Two sends with one key would each claim it in the same transaction.
          const first = keyed.get(key);
          if (first !== undefined) throw invalidBody([{ path: 'idempotencyKey', message: `repeats the key of message ${first}` }]);
          keyed.set(key, index);
          const earlier = await findRepeat(sender, key);
          if (earlier) {
            answers.push(earlier);
            continue;
          }
        }
        const row = await prepare(sender, item.body, { raw: item.raw, idempotencyKey: key });
        const plan = sender.workspace.plan;
        if (deps.checks.length) {
          const message = rowToOutbound(row);
          for (const check of deps.checks) await check({ message, plan, scheduledAt: row.scheduled_at });
        }
        const response: AcceptResponse = { id: row.public_id, status: row.status as AcceptResponse['status'], livemode: sender.livemode };
        answers.push(null);
        rows.push({ row, key, response });
      } catch (err) {
        if (!isAppError(err) || !ITEM_REFUSALS.has(err.code)) throw err;
        refused(index, err);
        answers.push({ error: { code: err.code, message: err.message, ...err.extra } });
      }
    }
    return { answers, rows };
  }

  /** Commits prepared rows in one transaction (and a batch's key with its answer); the Repeat when a key was taken meanwhile. */
  async function commit(sender: Sender, rows: Accepted[], batch: Pending['batch']): Promise<Repeat | true> {
    const now = clock.now();
    const pending: Pending = {
      workspaceId: sender.workspace.id,
      livemode: sender.livemode,
      plan: sender.workspace.plan,
      quota: planLimits(deps.config, sender.workspace.plan)?.messagesPerMonth ?? 0,
      month: monthOf(now),
      now: now.toISOString(),
      expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
      rows,
      batch,
    };
    try {
      await deps.writes.runBulk(commits, pending);
    } catch (err) {
      if (!(err instanceof Repeat)) throw err;
      return err;
    }
    for (const { row } of rows) {
      ledger.inserted(row);
      deps.accepted(row);
    }
    return true;
  }

  /**
   * Accepts sends together: each is validated and checked, then all are committed in one
   * transaction (quota, idempotency keys, rows), and only then answered. A refusal of any of them
   * refuses them all, so nothing is stored half (SMTP submission: one message per recipient).
   * A send whose key was used within 24 hours answers as it did then, and is not stored again.
   */
  async function acceptMany(sender: Sender, items: Item[]): Promise<AcceptResponse[]> {
    const { answers, rows } = await prepareAll(sender, items, (_i, err) => {
      throw err;
    });
    if (rows.length > 0) {
      const done = await commit(sender, rows, undefined);
      // A key taken meanwhile by a concurrent send: alone, its answer is the original's; in a
      // batch, the batch is accepted again, and that send now finds its original before the commit.
      if (done !== true) return items.length === 1 ? [done.response as AcceptResponse] : acceptMany(sender, items);
    }
    let next = 0;
    return answers.map((a) => (a ?? rows[next++].response) as AcceptResponse);
  }

  /**
   * POST /v1/send/batch. `atomic`: any refused item refuses the batch (422 listing every item's
   * issues, or the first item's other refusal); `partial`: refused items are answered with their
   * error in their place and the rest are accepted. Either way what is accepted commits in one
   * transaction, with the batch's key and its whole answer, so a repeat answers the same.
   */
  async function acceptBatch(sender: Sender, items: Item[], opts: { mode: BatchMode; key: string | null }): Promise<BatchResponse> {
    if (opts.key !== null) {
      checkKey(opts.key);
      const earlier = await findBatchRepeat(sender, opts.key);
      if (earlier) return earlier;
    }
    const refusals: { index: number; err: AppError }[] = [];
    const { answers, rows } = await prepareAll(sender, items, (index, err) => void refusals.push({ index, err }));
    if (opts.mode === 'atomic' && refusals.length > 0) throw batchRefusal(refusals);
    let next = 0;
    const response: BatchResponse = { data: answers.map((a) => a ?? rows[next++].response) };
    const batch = opts.key === null ? undefined : { key: opts.key, response: JSON.stringify(response) };
    if (rows.length > 0 || batch) {
      const done = await commit(sender, rows, batch);
      if (done !== true) return done.batch ? (done.response as BatchResponse) : acceptBatch(sender, items, opts);
    }
    return response;
  }

  return {
    /** Accepts a send: validate, check, commit, and only then answer. */
    accept: async (sender: Sender, body: unknown, opts: { raw: boolean; idempotencyKey?: string | null }): Promise<AcceptResponse> =>
      (await acceptMany(sender, [{ body, raw: opts.raw, idempotencyKey: opts.idempotencyKey }]))[0],
    acceptMany,
    acceptBatch,
  };
}
