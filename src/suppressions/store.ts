// The workspace's suppression lists: addresses Postern will not send to. One list per workspace and
// environment, as for messages: a test key's simulated bounce (failed@example.com) suppresses the
// address for test sends only, and a live bounce never shows in, or holds, test sends. The reason
// decides what a later send becomes:
//   bounce, complaint, manual → every email send to the address is `suppressed`;
//   unsubscribe (one-click List-Unsubscribe) → template sends are `opted_out`; raw sends, which are
//   transactional by nature, still go out.
// A stronger reason replaces `unsubscribe` (a bounce after an opt-out suppresses everything).
// An entry `*@domain` holds every address at that domain (an address's own entry comes first,
// unless it is an unsubscribe and the domain's is harder); an
// entry with `expiresAt` stops holding mail then, and reads no longer show it.
import { sql } from 'kysely';
import { escapeLike, flag, isUniqueViolation, queriesFor, type SuppressionsTable } from '../db/index.js';
import type { Deps } from '../deps.js';
import type { SuppressionReason } from '../contract/vocabulary.js';

export interface Suppression {
  address: string;
  reason: SuppressionReason;
  detail: string | null;
  messageId: string | null;
  createdAt: string;
  /** When the entry stops holding mail; null: until removed. */
  expiresAt: string | null;
}

/** Whose list: a workspace's, in one environment (the key's, the dashboard session's). */
export interface ListScope {
  workspaceId: string;
  livemode: boolean;
}

export interface SuppressionStore {
  /** Adds (or strengthens) an entry; returns the entry as stored. */
  add(
    scope: ListScope,
    input: { address: string; reason: SuppressionReason; detail?: string | null; messageId?: string | null; expiresAt?: string | null },
  ): Promise<Suppression>;
  remove(scope: ListScope, address: string): Promise<boolean>;
  /** The entry of exactly this address (or `*@domain`), unexpired. */
  get(scope: ListScope, address: string): Promise<Suppression | null>;
  /** The entry holding each given address (lowercased keys): its own, else its domain's `*@domain`; unexpired. */
  getMany(scope: ListScope, addresses: string[]): Promise<Map<string, Suppression>>;
  /**
   * Newest first (ties by address); `after`: the position of the last entry of the previous page
   * (keyset paging: no entry is skipped or repeated); `before`: only entries older than a time;
   * `search`: addresses containing the text.
   */
  list(
    scope: ListScope,
    opts: { limit: number; after?: ListPosition | null; before?: string | null; reason?: SuppressionReason; search?: string },
  ): Promise<Suppression[]>;
  /** Every entry of the workspace by address, in pages of `batch` (an export): keyset paging, so no entry is skipped. */
  each(scope: ListScope, batch?: number): AsyncGenerator<Suppression[]>;
}

/** Where a page of the list ends: its last entry's time and address (the list's order). */
export interface ListPosition {
  createdAt: string;
  address: string;
}

export const positionOf = (s: Suppression): ListPosition => ({ createdAt: s.createdAt, address: s.address });

/** The position as the opaque `cursor` of GET /v1/suppressions (base64url JSON), and back; null if malformed. */
export function encodePosition(p: ListPosition): string {
  return Buffer.from(JSON.stringify([p.createdAt, p.address])).toString('base64url');
}

export function decodePosition(cursor: string): ListPosition | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0]))) {
      return { createdAt: v[0], address: v[1] };
    }
  } catch {
    // not JSON
  }
  return null;
}

type Row = Pick<SuppressionsTable, 'address' | 'reason' | 'detail' | 'message_public_id' | 'created_at' | 'expires_at'>;
const COLUMNS = ['address', 'reason', 'detail', 'message_public_id', 'created_at', 'expires_at'] as const;

const toSuppression = (r: Row): Suppression => ({
  address: r.address,
  reason: r.reason,
  detail: r.detail,
  messageId: r.message_public_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

export const normalizeAddress = (a: string) => a.trim().toLowerCase();

/** The wildcard entry that holds an address: `*@domain`, or null for a key without a domain (a phone number, a token). */
function wildcardOf(address: string): string | null {
  const at = address.lastIndexOf('@');
  return at > 0 && !address.startsWith('*@') ? `*@${address.slice(at + 1)}` : null;
}

export function createSuppressionStore({ db, clock, ids }: Pick<Deps, 'db' | 'clock' | 'ids'>): SuppressionStore {
  const get = async (scope: ListScope, address: string) => {
    const row = await db
      .selectFrom('suppressions')
      .select(COLUMNS)
      .where('workspace_id', '=', scope.workspaceId)
      .where('livemode', '=', flag(scope.livemode))
      .where('address', '=', normalizeAddress(address))
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', clock.now().toISOString())]))
      .executeTakeFirst();
    return row ? toSuppression(row) : null;
  };
  const store: SuppressionStore = {
    get,
    async add(scope, input) {
      const address = normalizeAddress(input.address);
      const row = {
        id: ids.uuid(),
        workspace_id: scope.workspaceId,
        livemode: flag(scope.livemode),
        address,
        reason: input.reason,
        detail: input.detail ?? null,
        message_public_id: input.messageId ?? null,
        created_at: clock.now().toISOString(),
        expires_at: input.expiresAt ?? null,
      };
      try {
        await db.insertInto('suppressions').values(row).execute();
        return toSuppression(row);
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      // The entry there is replaced when it has expired, or strengthened from an unsubscribe.
      await db
        .updateTable('suppressions')
        .set({
          reason: input.reason,
          detail: row.detail,
          message_public_id: row.message_public_id,
          created_at: row.created_at,
          expires_at: row.expires_at,
        })
        .where('workspace_id', '=', scope.workspaceId)
        .where('livemode', '=', row.livemode)
        .where('address', '=', address)
        .where((eb) =>
          eb.or([eb('expires_at', '<=', row.created_at), ...(input.reason !== 'unsubscribe' ? [eb('reason', '=', 'unsubscribe')] : [])]),
        )
        .execute();
      return (await get(scope, address))!;
    },
    async remove(scope, address) {
      const r = await db
        .deleteFrom('suppressions')
        .where('workspace_id', '=', scope.workspaceId)
        .where('livemode', '=', flag(scope.livemode))
        .where('address', '=', normalizeAddress(address))
        .executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
    async getMany(scope, addresses) {
      const out = new Map<string, Suppression>();
      if (addresses.length === 0) return out;
      const asked = addresses.map(normalizeAddress);
      const list = [...new Set([...asked, ...asked.flatMap((a) => wildcardOf(a) ?? [])])];
      const live = flag(scope.livemode);
      const now = clock.now().toISOString();
      const build = () =>
        db
          .selectFrom('suppressions')
          .select(COLUMNS)
          .where('workspace_id', '=', scope.workspaceId)
          .where('livemode', '=', live)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
          .where('address', 'in', list);
      // Short lists are compiled once per length: SMTP submission asks at every RCPT, one address.
      const query =
        list.length <= 8
          ? queriesFor(db).compiled(`suppressions.getMany:${list.length}`, [scope.workspaceId, live, now, ...list], build)
          : build().compile();
      const { rows } = await db.executeQuery(query);
      const found = new Map(rows.map((r) => [r.address, toSuppression(r)]));
      for (const a of asked) {
        const wildcard = wildcardOf(a);
        const own = found.get(a);
        const domain = wildcard ? found.get(wildcard) : undefined;
        // The stronger of the two: an address's unsubscribe does not lift its domain's bounce.
        const entry = own && (own.reason !== 'unsubscribe' || !domain) ? own : (domain ?? own);
        if (entry) out.set(a, entry);
      }
      return out;
    },
    async list(scope, { limit, after, before, reason, search }) {
      const now = clock.now().toISOString();
      let q = db
        .selectFrom('suppressions')
        .select(COLUMNS)
        .where('workspace_id', '=', scope.workspaceId)
        .where('livemode', '=', flag(scope.livemode))
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
      if (after) {
        q = q.where((eb) =>
          eb.or([
            eb('created_at', '<', after.createdAt),
            eb.and([eb('created_at', '=', after.createdAt), eb('address', '>', after.address)]),
          ]),
        );
      }
      if (before) q = q.where('created_at', '<', before);
      if (reason) q = q.where('reason', '=', reason);
      if (search) q = q.where(sql<boolean>`address LIKE ${`%${escapeLike(normalizeAddress(search))}%`} ESCAPE '\\'`);
      const rows = await q.orderBy('created_at', 'desc').orderBy('address').limit(limit).execute();
      return rows.map(toSuppression);
    },
    // By address, on the (workspace, environment, address) unique index: each page is one index
    // range, however many entries share a creation time (an import's are all the same).
    async *each(scope, batch = 1000) {
      let after = '';
      for (;;) {
        const rows = await db
          .selectFrom('suppressions')
          .select(COLUMNS)
          .where('workspace_id', '=', scope.workspaceId)
          .where('livemode', '=', flag(scope.livemode))
          .where('address', '>', after)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', clock.now().toISOString())]))
          .orderBy('address')
          .limit(batch)
          .execute();
        if (rows.length) yield rows.map(toSuppression);
        if (rows.length < batch) return;
        after = rows[rows.length - 1].address;
      }
    },
  };
  return store;
}
