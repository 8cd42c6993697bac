// The read side of received mail: list, detail, raw source and attachments. The detail is also the
// payload of message.received (the event stores only the message's id; eventPayload renders it at
// delivery), so both come from toDetail(). Raw source and attachments are served for
// `inbound.retention` (30 days) after receipt, then 410 gone; purge() drops the bytes.
import { flag, type ReceivedMessagesTable, type ReceivedStatus } from '../db/index.js';
import type { Deps } from '../deps.js';
import { toStamp } from '../lib/clock.js';
import { AppError, invalidRequest, notFound } from '../lib/errors.js';
import { readSpan, type SourceSpan } from './body-spans.js';
import { extractAttachment, headerText, safeContentType, safeFilename, type ParsedFields } from './parse.js';
import { unquotedReply } from './stripped-reply.js';
import type { Verdicts } from './verify.js';

/**
 * The `parsed` JSON column: the parsed fields (the subject has its own column) and the verdicts.
 * `strippedReply` is left out when it is the whole text (mail that quotes nothing: unquotedReply
 * of the text), so the body is not stored twice. Rows of earlier versions left it out only when it
 * was equal to the text, which unquotedReply leaves as it is.
 */
export interface StoredParsed extends Omit<ParsedFields, 'subject' | 'strippedReply'> {
  strippedReply?: string;
  /**
   * Set on rows whose `headers` were read by headerText (parse.ts). Earlier versions kept each
   * header line one character per byte; such rows are read through headerText when read, which
   * gives exactly what it would have given when they were stored.
   */
  headersUtf8?: true;
  verdicts: Verdicts;
  /** Bodies kept as where they are in the raw source (body-spans.ts); their field is then empty. */
  spans?: BodySpans;
}

export interface BodySpans {
  text?: SourceSpan;
  html?: SourceSpan;
}

/** The parsed fields with every body in place: cut from `source` where `parsed` names a span. */
export function withBodies(p: StoredParsed, source: Uint8Array | null): StoredParsed {
  if (!p.spans) return p;
  // purge() puts bodies back before it drops a source, so a span always has one.
  if (!source) throw new Error('a received body is kept in a source that is gone');
  const { spans, ...rest } = p;
  return {
    ...rest,
    ...(spans.text ? { text: readSpan(source, spans.text) } : {}),
    ...(spans.html ? { html: readSpan(source, spans.html) } : {}),
  };
}

export interface ReceivedSummary {
  id: string;
  status: ReceivedStatus;
  from: string;
  subject: string;
  plusTag: string;
  sizeBytes: number;
  receivedAt: string;
}

export type ReceivedRow = ReceivedMessagesTable;

/** Sources dropped per transaction by purge(): each may first put its bodies back into `parsed`. */
const PURGE_BATCH = 200;

/** The headers of a stored row, as headerText reads them (see StoredParsed.headersUtf8). */
function storedHeaders(p: StoredParsed): Record<string, string | string[]> {
  if (p.headersUtf8) return p.headers;
  return Object.fromEntries(Object.entries(p.headers).map(([k, v]) => [k, Array.isArray(v) ? v.map(headerText) : headerText(v)]));
}

/** The detail of a stored row; `p` is its parsed fields with every body in place (withBodies). */
function toDetail(row: ReceivedRow, p: StoredParsed, publicUrl: string) {
  const base = `${publicUrl.replace(/\/$/, '')}/v1/inbound/messages/${row.public_id}`;
  return {
    id: row.public_id,
    status: row.status,
    channel: 'email',
    address: row.address,
    plusTag: row.plus_tag,
    from: p.from,
    to: p.to,
    cc: p.cc,
    envelope: JSON.parse(row.envelope) as { from: string; to: string[] },
    subject: row.subject,
    messageId: p.messageId,
    inReplyTo: p.inReplyTo,
    text: p.text,
    html: p.html,
    strippedReply: p.strippedReply ?? unquotedReply(p.text),
    truncated: p.truncated,
    headers: storedHeaders(p),
    // Made safe again on the way out: rows stored by earlier versions kept names and types as sent.
    attachments: p.attachments.map((a) => ({
      index: a.index,
      filename: safeFilename(a.filename, a.index, a.contentType),
      contentType: safeContentType(a.contentType),
      size: a.size,
      url: `${base}/attachments/${a.index}`,
    })),
    verdicts: p.verdicts,
    sizeBytes: Number(row.size_bytes),
    rawUrl: `${base}/raw`,
    receivedAt: row.received_at,
  };
}

export type ReceivedDetail = ReturnType<typeof toDetail>;

export interface ListQuery {
  limit?: number;
  before?: string;
  address?: string;
}

export interface ReceivedReader {
  list(workspaceId: string, livemode: boolean, q: ListQuery): Promise<ReceivedSummary[]>;
  detail(workspaceId: string, livemode: boolean, publicId: string): Promise<ReceivedDetail>;
  raw(workspaceId: string, livemode: boolean, publicId: string): Promise<Buffer>;
  attachment(
    workspaceId: string,
    livemode: boolean,
    publicId: string,
    index: number,
  ): Promise<{ content: Buffer; contentType: string; filename: string }>;
  /** Drops raw sources older than the retention; returns how many. The daily job calls this. */
  purge(): Promise<number>;
  /** The webhook payload `data` of a message.received event stored as `{"id":"rcv_…"}`. */
  eventPayload(data: string): Promise<string>;
}

export function createReceivedReader({
  config,
  db,
  clock,
  publicUrl,
}: Pick<Deps, 'config' | 'db' | 'clock'> & { publicUrl: () => string }): ReceivedReader {
  const retentionMs = config.inbound.retention;
  const retentionDays = Math.round(retentionMs / 86_400_000);
  const cutoff = () => `${new Date(clock.now().getTime() - retentionMs).toISOString().slice(0, 23)}000000Z`;

  const row = async (workspaceId: string, livemode: boolean, publicId: string) => {
    const r = await db
      .selectFrom('received_messages')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('livemode', '=', flag(livemode))
      .where('public_id', '=', publicId)
      .executeTakeFirst();
    if (!r) throw notFound('message');
    return r;
  };

  /** The stored source of a row; null once purged. */
  const sourceOf = async (r: ReceivedRow): Promise<Buffer | null> =>
    (await db.selectFrom('inbound_raw').select('source').where('id', '=', r.raw_id).executeTakeFirst())?.source ?? null;

  const parsedOf = async (r: ReceivedRow): Promise<StoredParsed> => {
    const p = JSON.parse(r.parsed) as StoredParsed;
    return p.spans ? withBodies(p, await sourceOf(r)) : p;
  };

  const rawOf = async (r: ReceivedRow): Promise<Buffer> => {
    const gone = () => new AppError('gone', `the raw source and attachments are kept ${retentionDays} days after receipt`);
    if (r.received_at < cutoff()) throw gone();
    const source = await sourceOf(r);
    if (!source) throw gone();
    return Buffer.from(source);
  };

  return {
    async list(workspaceId, livemode, q) {
      let query = db
        .selectFrom('received_messages')
        .select(['public_id', 'status', 'from_email', 'subject', 'plus_tag', 'size_bytes', 'received_at'])
        .where('workspace_id', '=', workspaceId)
        .where('livemode', '=', flag(livemode));
      if (q.before !== undefined) {
        // Every fractional digit counts: receivedAt values are unique to the microsecond or finer.
        const before = toStamp(q.before);
        if (before === null) throw invalidRequest('before must be an ISO 8601 timestamp');
        query = query.where('received_at', '<', before);
      }
      if (q.address !== undefined) {
        const a = await db
          .selectFrom('inbound_addresses')
          .select('id')
          .where('workspace_id', '=', workspaceId)
          .where('public_id', '=', q.address)
          .executeTakeFirst();
        if (!a) return [];
        query = query.where('address_id', '=', a.id);
      }
      const rows = await query
        .orderBy('received_at', 'desc')
        .orderBy('id', 'desc')
        .limit(q.limit ?? 50)
        .execute();
      return rows.map((r) => ({
        id: r.public_id,
        status: r.status,
        from: r.from_email,
        subject: r.subject,
        plusTag: r.plus_tag,
        sizeBytes: Number(r.size_bytes),
        receivedAt: r.received_at,
      }));
    },
    async detail(workspaceId, livemode, publicId) {
      const r = await row(workspaceId, livemode, publicId);
      return toDetail(r, await parsedOf(r), publicUrl());
    },
    async raw(workspaceId, livemode, publicId) {
      return rawOf(await row(workspaceId, livemode, publicId));
    },
    async attachment(workspaceId, livemode, publicId, index) {
      const r = await row(workspaceId, livemode, publicId);
      const raw = await rawOf(r);
      const a = await extractAttachment(raw, index, config.inbound.maxParts);
      if (!a) throw notFound('attachment');
      // The name and type the detail lists (made safe), so both always agree.
      const listed = (JSON.parse(r.parsed) as StoredParsed).attachments.find((x) => x.index === index);
      return listed
        ? { ...a, filename: safeFilename(listed.filename, index, listed.contentType), contentType: safeContentType(listed.contentType) }
        : a;
    },
    async eventPayload(data) {
      const id = (JSON.parse(data) as { id?: string }).id;
      const r = id ? await db.selectFrom('received_messages').selectAll().where('public_id', '=', id).executeTakeFirst() : undefined;
      return r ? JSON.stringify(toDetail(r, await parsedOf(r), publicUrl())) : data;
    },
    async purge() {
      const before = cutoff();
      let purged = 0;
      for (;;) {
        const batch = await db
          .selectFrom('inbound_raw')
          .select('id')
          .where('received_at', '<', before)
          .where('purged_at', 'is', null)
          .limit(PURGE_BATCH)
          .execute();
        if (batch.length === 0) return purged;
        const ids = batch.map((b) => b.id);
        // A body kept as a span goes back into `parsed` in the transaction that drops its source.
        await db.transaction().execute(async (trx) => {
          const spanned = await trx
            .selectFrom('received_messages as m')
            .innerJoin('inbound_raw as r', 'r.id', 'm.raw_id')
            .select(['m.id', 'm.parsed', 'r.source'])
            .where('m.raw_id', 'in', ids)
            .where('m.parsed', 'like', '%"spans":%')
            .execute();
          for (const m of spanned) {
            const parsed = JSON.stringify(withBodies(JSON.parse(m.parsed) as StoredParsed, m.source));
            await trx.updateTable('received_messages').set({ parsed }).where('id', '=', m.id).execute();
          }
          await trx.updateTable('inbound_raw').set({ source: null, purged_at: clock.now().toISOString() }).where('id', 'in', ids).execute();
        });
        purged += ids.length;
      }
    },
  };
}
