// Reading messages: one by public id, and the list — newest first, paged by an opaque cursor over
// `seq` (the insertion order), so rows inserted while a client pages land before its cursor and
// never shift a later page: no duplicates, no gaps. Each filter narrows one of the
// (workspace, livemode[, column], seq) indexes; `q` and `metadata[key]` are residual predicates
// evaluated while walking that index newest-first, which stops after `limit` matches.
import type { Transaction } from 'kysely';
import { containsText, type Database, type Db, type Dialect, escapeLike, flag, ilike, inList } from '../db/index.js';
import { AppError, notFound } from '../lib/errors.js';
import type { StatusFilter } from '../contract/messages.js';
import { type ContentRow, type MessageContent, rowToMessage, type MessageRow } from './message.js';
import type { Channel } from '../contract/channels.js';
import type { Message } from '../contract/message-schemas.js';

/** Whether a message is deferred in the sense of the `deferred` filter. */
const isDeferred = (m: Pick<Message, 'status' | 'error'>): boolean => m.status === 'dispatched' && m.error !== null;

export interface Scope {
  workspaceId: string;
  livemode: boolean;
}

export interface ListFilters {
  limit: number;
  cursor?: string;
  status?: StatusFilter;
  template?: string;
  channel?: Channel;
  q?: string;
  metadata?: Record<string, string>;
}

export interface Page {
  data: Message[];
  /** null when there is nothing older. */
  nextCursor: string | null;
}

function encodeCursor(seq: number): string {
  return Buffer.from(`s${seq}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString();
  const m = /^s(\d{1,15})$/.exec(text);
  if (!m) throw new AppError('invalid_request', 'cursor is not one this server issued');
  return Number(m[1]);
}

/** Whether a message passes the list filters (for the live part of a tail). */
export function matchesFilters(m: Message, f: Omit<ListFilters, 'limit' | 'cursor'>): boolean {
  if (f.status === 'deferred' ? !isDeferred(m) : f.status && m.status !== f.status) return false;
  if (f.template && m.templateSlug !== f.template) return false;
  if (f.channel && m.channel !== f.channel) return false;
  for (const [k, v] of Object.entries(f.metadata ?? {})) {
    if (!(k in m.metadata) || String(m.metadata[k]) !== v) return false;
  }
  if (f.q) {
    const q = f.q.toLowerCase();
    const fields = [m.publicId, m.recipient, m.templateSlug ?? '', ...Object.entries(m.metadata).flatMap(([k, v]) => [k, String(v)])];
    if (!fields.some((x) => x.toLowerCase().includes(q))) return false;
  }
  return true;
}

/** The row of a message by public id, only within the key's workspace and environment; else 404. */
export async function scopedMessageRow(db: Db | Transaction<Database>, scope: Scope, publicId: string): Promise<MessageRow> {
  const row = await db
    .selectFrom('messages')
    .selectAll()
    .where('public_id', '=', publicId)
    .where('workspace_id', '=', scope.workspaceId)
    .where('livemode', '=', flag(scope.livemode))
    .executeTakeFirst();
  if (!row) throw notFound(`message ${publicId}`);
  return row;
}

/** A message's row with what it says (message_contents), by public id within the scope; else 404. */
export async function scopedContentRow(db: Db | Transaction<Database>, scope: Scope, publicId: string): Promise<ContentRow> {
  const row = await scopedMessageRow(db, scope, publicId);
  const contents = await db.selectFrom('message_contents').selectAll().where('message_id', '=', row.id).executeTakeFirst();
  return withContent(row, contents);
}

/**
 * Each of `rows` with what it says. Accept writes both in one transaction, so every row has its
 * contents; one without (a database edited by hand) gets empty content, which fails to render and
 * so fails the message, rather than being claimed again and again.
 */
export async function withContents(db: Db | Transaction<Database>, dialect: Dialect, rows: MessageRow[]): Promise<ContentRow[]> {
  if (rows.length === 0) return [];
  const contents = await db
    .selectFrom('message_contents')
    .selectAll()
    .where(
      inList(
        dialect,
        'message_id',
        rows.map((r) => r.id),
      ),
    )
    .execute();
  const byId = new Map(contents.map((c) => [c.message_id, c]));
  return rows.map((row) => withContent(row, byId.get(row.id)));
}

function withContent(row: MessageRow, c: MessageContent | undefined): ContentRow {
  return { ...row, content: c?.content ?? '', attachments: c?.attachments ?? '[]' };
}

export function createReader({ db, dialect }: { db: Db; dialect: Dialect }) {
  return {
    async get(scope: Scope, publicId: string): Promise<Message> {
      return rowToMessage(await scopedMessageRow(db, scope, publicId));
    },

    async list(scope: Scope, f: ListFilters): Promise<Page> {
      let q = db
        .selectFrom('messages')
        .selectAll()
        .where('workspace_id', '=', scope.workspaceId)
        .where('livemode', '=', flag(scope.livemode));
      if (f.cursor !== undefined) q = q.where('seq', '<', decodeCursor(f.cursor));
      if (f.status === 'deferred') q = q.where('status', '=', 'dispatched').where('error', 'is not', null);
      else if (f.status) q = q.where('status', '=', f.status);
      if (f.template) q = q.where('template_slug', '=', f.template);
      if (f.channel) q = q.where('channel', '=', f.channel);
      for (const [k, v] of Object.entries(f.metadata ?? {})) {
        // metadata_text is JSON with string values: `"key":"value"` occurs only as that exact pair.
        q = q.where(containsText(dialect, 'metadata_text', `${JSON.stringify(k)}:${JSON.stringify(v)}`));
      }
      if (f.q) q = q.where(ilike(dialect, 'search_text', `%${escapeLike(f.q)}%`));
      const rows = await q
        .orderBy('seq', 'desc')
        .limit(f.limit + 1)
        .execute();
      const more = rows.length > f.limit;
      const page = more ? rows.slice(0, f.limit) : rows;
      return { data: page.map(rowToMessage), nextCursor: more ? encodeCursor(Number(page[page.length - 1].seq)) : null };
    },
  };
}
