// Per destination domain of email (docs/email-delivery.md, "Destinations"):
//   - counts per workspace: delivered, deferred, bounced (refused at SMTP time), with the last error
//     and its category. Counted in memory and added to the database every couple of seconds, so
//     the hot path writes nothing more per message;
//   - holds: delivery to a domain suspended, for one workspace (its API key) or for every workspace
//     (the operator, `postern queue suspend`). Held mail is deferred without a connection and
//     stays in the queue; resuming releases it at once;
//   - back-off: a destination that answers "rate limited" or "blocked" (the bounce rules'
//     categories rate_limited and policy) is left alone for a while, box-wide — its reputation is
//     the box's — from `delivery.backoff.min`, doubling on each new refusal up to
//     `delivery.backoff.max`, and forgotten at the first delivery that goes through;
//   - adaptive back-off (adaptive-backoff.ts): a destination that rate-limits is sent to at a
//     lowered rate and over fewer connections once the pause is over, climbing back after
//     successes; shown here beside the rest (`adaptiveBackoff`).
// Holds and back-offs are read from the database every two seconds, so every node of a cluster
// honours them within that time; this node's own changes apply at once.
import type { DestinationHold } from '../../contract/destinations.js';
import type { Deps } from '../../deps.js';
import type { AdaptiveBackoff, PaceView } from './adaptive-backoff.js';
import type { BounceCategory } from './bounce-rules.js';

export type DestinationOutcome = 'delivered' | 'deferred' | 'bounced';

export interface DestinationView {
  domain: string;
  delivered: number;
  deferred: number;
  bounced: number;
  lastError: string | null;
  lastCategory: string | null;
  lastErrorAt: string | null;
  /** Delivery there is held: by this workspace, by the operator for everyone, or not. */
  suspended: DestinationHold | null;
  /** Box-wide back-off in force until then, or null. */
  backoffUntil: string | null;
  backoffReason: string | null;
  /** The adaptive back-off in force (box-wide): the lowered rate and connections, or null. */
  adaptiveBackoff: PaceView | null;
}

export interface Destinations {
  /** The lowered rate and connections of destinations that throttle. */
  readonly adaptive: AdaptiveBackoff;
  /** Why delivery to `domain` must wait (a hold or a back-off), or null. */
  gate(workspaceId: string, domain: string): { reason: string; retryAt: Date } | null;
  record(workspaceId: string, domain: string, outcome: DestinationOutcome, error?: { text: string; category: BounceCategory }): void;
  /** A refusal that earns the domain a back-off (rate limited, blocked). */
  throttled(domain: string, reason: string): Promise<void>;
  /** A delivery went through: any back-off of the domain ends. */
  recovered(domain: string): Promise<void>;
  /** The operator ends the domain's back-off, the pause and the lowered rate, at once; whether there was one. */
  resetBackoff(domain: string): Promise<boolean>;
  list(workspaceId: string, opts: { limit: number; after?: string }): Promise<DestinationView[]>;
  get(workspaceId: string, domain: string): Promise<DestinationView>;
  /** Holds delivery to `domain` for one workspace, or every workspace (''). */
  suspend(workspaceId: string, domain: string, reason: string): Promise<void>;
  /** Lifts the hold; returns whether there was one. */
  resume(workspaceId: string, domain: string): Promise<boolean>;
  /** Adds the counts still in memory to the database (also every couple of seconds). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface DestinationsDeps extends Pick<Deps, 'db' | 'clock' | 'log'> {
  backoff: { minMs: number; maxMs: number };
  adaptive: AdaptiveBackoff;
}

const REFRESH_MS = 2000;

interface Counts {
  delivered: number;
  deferred: number;
  bounced: number;
  error?: { text: string; category: string; at: string };
}

export function createDestinations(deps: DestinationsDeps): Destinations {
  const { db, clock, log } = deps;
  let holds = new Map<string, string>(); // `${domain} ${workspaceId}` → reason
  let backoffs = new Map<string, { until: number; step: number; reason: string }>();
  let loading: Promise<void> | null = null;
  const pending = new Map<string, Counts>(); // `${workspaceId} ${domain}`

  async function load(): Promise<void> {
    const [h, b] = await Promise.all([
      db.selectFrom('destination_holds').select(['domain', 'workspace_id', 'reason']).execute(),
      db.selectFrom('destination_backoff').select(['domain', 'until', 'step_ms', 'reason']).execute(),
      deps.adaptive.load(),
    ]);
    holds = new Map(h.map((r) => [`${r.domain} ${r.workspace_id}`, r.reason]));
    backoffs = new Map(b.map((r) => [r.domain, { until: Date.parse(r.until), step: Number(r.step_ms), reason: r.reason }]));
  }
  // The snapshot is refreshed in the background every two seconds; a check never waits for the database.
  const refresh = () => {
    if (loading) return;
    loading = load()
      .catch((err: unknown) => log.warn({ err }, 'destinations: reading holds and back-offs failed'))
      .finally(() => (loading = null));
  };
  const ready = load().catch((err: unknown) => log.warn({ err }, 'destinations: reading holds and back-offs failed'));

  const timer = setInterval(() => {
    refresh();
    void counted();
  }, REFRESH_MS);
  timer.unref();

  // Flushes run one after the other, and a read of the counts first waits for them (and flushes
  // what is pending), so it sees every outcome recorded before it: a count taken out of `pending`
  // and not yet in the database was missing from a read made meanwhile (a busy machine made that
  // window long enough to see).
  let flushing: Promise<void> = Promise.resolve();
  function flush(): Promise<void> {
    flushing = flushing.catch(() => {}).then(writePending);
    return flushing;
  }
  async function writePending(): Promise<void> {
    if (pending.size === 0) return;
    const batch = [...pending];
    pending.clear();
    const now = clock.now().toISOString();
    for (const [key, c] of batch) {
      const [workspaceId, domain] = key.split(' ');
      const last = c.error ? { last_error: c.error.text, last_category: c.error.category, last_error_at: c.error.at } : {};
      await db
        .insertInto('destination_stats')
        .values({
          workspace_id: workspaceId,
          domain,
          delivered: c.delivered,
          deferred: c.deferred,
          bounced: c.bounced,
          ...last,
          updated_at: now,
        })
        .onConflict((oc) =>
          oc.columns(['workspace_id', 'domain']).doUpdateSet((eb) => ({
            delivered: eb('destination_stats.delivered', '+', c.delivered),
            deferred: eb('destination_stats.deferred', '+', c.deferred),
            bounced: eb('destination_stats.bounced', '+', c.bounced),
            ...last,
            updated_at: now,
          })),
        )
        .execute();
    }
  }

  // Every outcome recorded so far added to the database; a failed write is logged (its counts are lost).
  const counted = () => flush().catch((err: unknown) => log.warn({ err }, 'destinations: counts not saved'));

  function view(
    domain: string,
    workspaceId: string,
    row:
      | {
          delivered: number;
          deferred: number;
          bounced: number;
          last_error: string | null;
          last_category: string | null;
          last_error_at: string | null;
        }
      | undefined,
  ): DestinationView {
    const b = backoffs.get(domain);
    const inForce = b && b.until > clock.now().getTime() ? b : null;
    return {
      domain,
      delivered: Number(row?.delivered ?? 0),
      deferred: Number(row?.deferred ?? 0),
      bounced: Number(row?.bounced ?? 0),
      lastError: row?.last_error ?? null,
      lastCategory: row?.last_category ?? null,
      lastErrorAt: row?.last_error_at ?? null,
      suspended: holds.has(`${domain} ${workspaceId}`) ? 'workspace' : holds.has(`${domain} `) ? 'operator' : null,
      backoffUntil: inForce ? new Date(inForce.until).toISOString() : null,
      backoffReason: inForce?.reason ?? null,
      adaptiveBackoff: deps.adaptive.state(domain),
    };
  }

  return {
    adaptive: deps.adaptive,

    gate(workspaceId, domain) {
      const now = clock.now().getTime();
      const held = holds.get(`${domain} `) ?? holds.get(`${domain} ${workspaceId}`);
      // Held mail is looked at again every five minutes, and at once when the hold is lifted.
      if (held !== undefined) return { reason: `delivery to ${domain} is suspended (${held})`, retryAt: new Date(now + 5 * 60_000) };
      const b = backoffs.get(domain);
      if (b && b.until > now) {
        return { reason: `backing off from ${domain} until ${new Date(b.until).toISOString()} (${b.reason})`, retryAt: new Date(b.until) };
      }
      return null;
    },

    record(workspaceId, domain, outcome, error) {
      const key = `${workspaceId} ${domain}`;
      const c = pending.get(key) ?? { delivered: 0, deferred: 0, bounced: 0 };
      c[outcome]++;
      if (error) c.error = { ...error, at: clock.now().toISOString() };
      pending.set(key, c);
    },

    async throttled(domain, reason) {
      const now = clock.now().getTime();
      const prev = backoffs.get(domain);
      // A refusal while backing off already (mail sent before the back-off began) does not double it.
      if (prev && prev.until > now) return;
      const step = Math.min(deps.backoff.maxMs, prev ? Math.max(deps.backoff.minMs, prev.step * 2) : deps.backoff.minMs);
      const next = { until: now + step, step, reason };
      backoffs.set(domain, next);
      const row = { until: new Date(next.until).toISOString(), step_ms: step, reason, updated_at: new Date(now).toISOString() };
      await db
        .insertInto('destination_backoff')
        .values({ domain, ...row })
        .onConflict((oc) => oc.column('domain').doUpdateSet(row))
        .execute();
      log.warn({ domain, seconds: step / 1000, reason }, 'destination throttles or blocks: backing off');
    },

    async recovered(domain) {
      if (!backoffs.has(domain)) return;
      backoffs.delete(domain);
      await db.deleteFrom('destination_backoff').where('domain', '=', domain).execute();
      log.info({ domain }, 'destination accepts mail again: back-off over');
    },

    async resetBackoff(domain) {
      const r = await db.deleteFrom('destination_backoff').where('domain', '=', domain).executeTakeFirst();
      backoffs.delete(domain);
      const slowed = await deps.adaptive.reset(domain);
      return Number(r.numDeletedRows) > 0 || slowed;
    },

    async list(workspaceId, opts) {
      await ready;
      await Promise.all([load(), counted()]);
      let q = db.selectFrom('destination_stats').selectAll().where('workspace_id', '=', workspaceId).orderBy('domain').limit(opts.limit);
      if (opts.after) q = q.where('domain', '>', opts.after);
      const rows = await q.execute();
      return rows.map((r) => view(r.domain, workspaceId, r));
    },

    async get(workspaceId, domain) {
      await ready;
      await Promise.all([load(), counted()]);
      const row = await db
        .selectFrom('destination_stats')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('domain', '=', domain)
        .executeTakeFirst();
      return view(domain, workspaceId, row);
    },

    async suspend(workspaceId, domain, reason) {
      const row = { reason, created_at: clock.now().toISOString() };
      await db
        .insertInto('destination_holds')
        .values({ domain, workspace_id: workspaceId, ...row })
        .onConflict((oc) => oc.columns(['domain', 'workspace_id']).doUpdateSet(row))
        .execute();
      holds.set(`${domain} ${workspaceId}`, reason);
    },

    async resume(workspaceId, domain) {
      const r = await db
        .deleteFrom('destination_holds')
        .where('domain', '=', domain)
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst();
      holds.delete(`${domain} ${workspaceId}`);
      return Number(r.numDeletedRows) > 0;
    },

    flush,

    async close() {
      clearInterval(timer);
      // A read under way finishes first: the daemon closes the database next.
      await Promise.all([ready, loading]);
      await counted();
    },
  };
}
