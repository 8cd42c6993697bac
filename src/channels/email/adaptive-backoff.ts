// Adaptive back-off per destination domain (docs/deliverability.md, "Adaptive back-off per
// destination"). A destination that answers "slow down" (a reply the bounce rules put in the
// category rate_limited) is sent to at a lower rate and over fewer connections per host, and climbs
// back step by step as its deliveries go through — AIMD, as TCP finds a path's capacity:
//   - decrease: the rate (messages a minute) and the connections per host are multiplied by
//     `delivery.adaptiveBackoff.decrease` (0.5), at least 1 each. The first throttle starts from
//     the domain's `delivery.domainRates` ceiling, or without one from what this node delivered
//     there in the last minute (at least MIN_TARGET), which is also the rate it climbs back to.
//     One decrease per round: an answer to mail sent before the last decrease does not lower the
//     rate again (it was sent at the old rate);
//   - increase: after `increaseAfter` deliveries accepted in a row (seen by one node), the rate
//     grows by `increaseStep` of the rate the last decrease set (at least 1) and the connections
//     by one; back at the rate it climbs to with every connection, the back-off ends. It ends
//     too a day after the last throttle, whatever the rate (FORGET_AFTER_MS).
// The state is a row per domain (destination_pace), the cluster's: every node reads it every two
// seconds (with the holds, destinations.ts) and changes it only from the version it read, so nodes that see one throttle lower the
// rate once. The lowered rate is a budget of the cluster's (cluster/budgets.ts) with a burst of ten
// seconds' worth, so mail goes out spread over the minute, not all at its start; the configured
// `delivery.domainRates` stays in force beside it, a ceiling the back-off never climbs above.
import type { Budget, Rate } from '../../cluster/index.js';
import type { Deps } from '../../deps.js';
import { parseRate } from './rates.js';

/** A back-off with no throttle for this long ends (see load()). */
export const FORGET_AFTER_MS = 86_400_000;
/** The rate a domain without a configured ceiling climbs back to, at least (messages a minute). */
const MIN_TARGET = 10;
const MINUTE = 60_000;
// The lowered rate's bucket holds this much of it: mail spread over the minute.
const BURST_MS = 10_000;

export interface AdaptiveBackoffSettings {
  enabled: boolean;
  decrease: number;
  increaseAfter: number;
  increaseStep: number;
}

/** A destination's back-off as the API shows it. */
export interface PaceView {
  /** Messages a minute, the whole cluster's. */
  rate: number;
  /** The rate it climbs back to (the configured ceiling, or what was sent before the first throttle). */
  targetRate: number;
  /** Connections per host, the whole cluster's. */
  connections: number;
  /** When the destination first throttled (the back-off began). */
  since: string;
  /** The last throttling answer and when it came. */
  lastAnswer: string;
  lastAnswerAt: string;
  /** Throttling answers since the back-off began. */
  throttles: number;
}

export interface AdaptiveBackoff {
  readonly enabled: boolean;
  /** Takes a slot of the domain's lowered rate: 0 when taken (or none in force), else the ms until one. */
  take(domain: string): Promise<number>;
  /** The cluster's connections per host of the domain while it is backed off, or null. */
  connections(domain: string): number | null;
  /** A throttling answer to mail whose attempt began at `startedAt` (ms): rate and connections go down. */
  throttled(domain: string, answer: string, startedAt: number): Promise<void>;
  /** A delivery there went through: counts toward the next step up. */
  accepted(domain: string): Promise<void>;
  state(domain: string): PaceView | null;
  /** Ends a domain's back-off at once (the operator's reset); returns whether there was one. */
  reset(domain: string): Promise<boolean>;
  /** Reads every domain's state from the database (destinations.ts does, every two seconds). */
  load(): Promise<void>;
}

export interface AdaptiveBackoffDeps extends Pick<Deps, 'db' | 'clock' | 'log' | 'budgets'> {
  settings: AdaptiveBackoffSettings;
  /** `delivery.domainRates`: the ceilings. */
  domainRates: Record<string, string>;
  /** `delivery.maxConnectionsPerHost`. */
  maxConnectionsPerHost: number;
}

interface Row {
  domain: string;
  rate: number;
  connections: number;
  target_rate: number;
  step: number;
  since: string;
  decreased_at: string;
  last_answer: string;
  last_answer_at: string;
  throttles: number;
  version: number;
}

const perMinute = (r: Rate) => (r.count * MINUTE) / r.perMs;

/** The budget of `rate` messages a minute: a bucket of ten seconds' worth (at least one message). */
function paceRate(rate: number): Rate {
  const count = Math.max(1, Math.ceil((rate * BURST_MS) / MINUTE));
  return { count, perMs: Math.round((count * MINUTE) / rate) };
}

export function createAdaptiveBackoff(deps: AdaptiveBackoffDeps): AdaptiveBackoff {
  const { db, clock, log, settings } = deps;
  const ceilings = new Map<string, number>();
  for (const [domain, text] of Object.entries(deps.domainRates))
    ceilings.set(domain.toLowerCase(), Math.max(1, Math.floor(perMinute(parseRate(text)))));
  let rows = new Map<string, Row>();
  // Deliveries accepted per domain in this minute and the one before (a sliding estimate of the last minute).
  const sent = new Map<string, { minute: number; now: number; before: number }>();
  // Accepted in a row since the state this node last saw (its version).
  const streak = new Map<string, { version: number; n: number }>();
  const budgets = new Map<string, { rate: number; budget: Budget }>();

  const minuteOf = (ms: number) => Math.floor(ms / MINUTE);
  function sentLastMinute(domain: string): number {
    const s = sent.get(domain);
    if (!s) return 0;
    const now = clock.now().getTime();
    const m = minuteOf(now);
    if (m > s.minute + 1) return 0;
    const [cur, prev] = m === s.minute ? [s.now, s.before] : [0, s.now];
    return Math.round(cur + prev * (1 - (now % MINUTE) / MINUTE));
  }

  async function load(): Promise<void> {
    const all = (await db.selectFrom('destination_pace').selectAll().execute()) as Row[];
    const now = clock.now().getTime();
    // A destination that has not throttled for FORGET_AFTER_MS is at full speed again, climbed back
    // or not (no mail went there to climb on): its receiver has long forgotten the episode too.
    const stale = all.filter((r) => now - Date.parse(r.last_answer_at) > FORGET_AFTER_MS);
    for (const r of stale) {
      await db.deleteFrom('destination_pace').where('domain', '=', r.domain).where('version', '=', r.version).execute();
      log.info({ domain: r.domain }, 'destination has not throttled for a day: adaptive back-off over');
    }
    rows = new Map(
      all
        .filter((r) => !stale.includes(r))
        .map((r) => [r.domain, { ...r, rate: Number(r.rate), connections: Number(r.connections), version: Number(r.version) }]),
    );
    const minute = minuteOf(now);
    for (const [d, s] of sent) if (s.minute < minute - 1) sent.delete(d);
    for (const d of streak.keys()) if (!rows.has(d)) streak.delete(d);
    for (const d of budgets.keys()) if (!rows.has(d)) budgets.delete(d);
  }
  const read = async (domain: string) =>
    (await db.selectFrom('destination_pace').selectAll().where('domain', '=', domain).executeTakeFirst()) as Row | undefined;

  async function throttled(domain: string, answer: string, startedAt: number): Promise<void> {
    // A few rounds at most: each lost race means another node changed the row meanwhile.
    for (let round = 0; round < 5; round++) {
      const now = clock.now();
      const at = now.toISOString();
      const row = await read(domain);
      if (!row) {
        const target = ceilings.get(domain) ?? Math.max(MIN_TARGET, sentLastMinute(domain));
        const rate = Math.max(1, Math.floor(target * settings.decrease));
        const fresh: Row = {
          domain,
          rate,
          connections: Math.max(1, Math.floor(deps.maxConnectionsPerHost * settings.decrease)),
          target_rate: target,
          step: Math.max(1, Math.round(rate * settings.increaseStep)),
          since: at,
          decreased_at: at,
          last_answer: answer,
          last_answer_at: at,
          throttles: 1,
          version: 1,
        };
        const r = await db
          .insertInto('destination_pace')
          .values({ ...fresh, updated_at: at })
          .onConflict((oc) => oc.column('domain').doNothing())
          .returning('domain')
          .executeTakeFirst();
        if (!r) continue;
        rows.set(domain, fresh);
        log.warn({ domain, rate, connections: fresh.connections, answer }, 'destination throttles: sending to it slower');
        return;
      }
      const version = Number(row.version);
      // Sent before the last decrease, at the old rate: noted, the rate stays.
      const repeat = Date.parse(row.decreased_at) >= startedAt;
      const next: Partial<Pick<Row, 'rate' | 'connections' | 'step' | 'decreased_at'>> = repeat
        ? {}
        : (() => {
            // From the ceiling when the operator lowered it below the rate since.
            const current = Math.min(Number(row.rate), ceilings.get(domain) ?? Infinity);
            const rate = Math.max(1, Math.floor(current * settings.decrease));
            return {
              rate,
              connections: Math.max(1, Math.floor(Number(row.connections) * settings.decrease)),
              step: Math.max(1, Math.round(rate * settings.increaseStep)),
              decreased_at: at,
            };
          })();
      const change = { ...next, last_answer: answer, last_answer_at: at, throttles: Number(row.throttles) + 1, version: version + 1 };
      const r = await db
        .updateTable('destination_pace')
        .set({ ...change, updated_at: at })
        .where('domain', '=', domain)
        .where('version', '=', version)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) continue;
      const updated = {
        ...row,
        ...change,
        rate: Number(change.rate ?? row.rate),
        connections: Number(change.connections ?? row.connections),
      };
      rows.set(domain, updated);
      if (!repeat)
        log.warn(
          { domain, rate: updated.rate, connections: updated.connections, answer },
          'destination throttles again: sending to it slower',
        );
      return;
    }
  }

  async function stepUp(row: Row): Promise<void> {
    const target = Math.min(row.target_rate, ceilings.get(row.domain) ?? Infinity);
    const rate = Math.min(target, row.rate + Number(row.step));
    const connections = Math.min(deps.maxConnectionsPerHost, row.connections + 1);
    const at = clock.now().toISOString();
    if (rate >= target && connections >= deps.maxConnectionsPerHost) {
      const r = await db
        .deleteFrom('destination_pace')
        .where('domain', '=', row.domain)
        .where('version', '=', row.version)
        .executeTakeFirst();
      if (Number(r.numDeletedRows) > 0) {
        rows.delete(row.domain);
        log.info({ domain: row.domain, rate }, 'destination accepts mail at full speed again: adaptive back-off over');
      }
      return;
    }
    const version = row.version + 1;
    const r = await db
      .updateTable('destination_pace')
      .set({ rate, connections, version, updated_at: at })
      .where('domain', '=', row.domain)
      .where('version', '=', row.version)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) > 0) rows.set(row.domain, { ...row, rate, connections, version });
  }

  return {
    enabled: settings.enabled,

    async take(domain) {
      const row = settings.enabled ? rows.get(domain) : undefined;
      if (!row) return 0;
      let b = budgets.get(domain);
      if (!b || b.rate !== row.rate)
        budgets.set(domain, (b = { rate: row.rate, budget: deps.budgets.budget(`adaptive-rate:${domain}`, paceRate(row.rate)) }));
      return b.budget.take(domain);
    },

    connections(domain) {
      return settings.enabled ? (rows.get(domain)?.connections ?? null) : null;
    },

    // A write that fails (the database away) costs this step of the back-off, never the delivery's outcome.
    throttled(domain, answer, startedAt) {
      if (!settings.enabled) return Promise.resolve();
      return throttled(domain, answer.slice(0, 500), startedAt).catch((err: unknown) =>
        log.warn({ err, domain }, 'adaptive back-off: the throttle could not be recorded'),
      );
    },

    async accepted(domain) {
      if (!settings.enabled) return;
      const m = minuteOf(clock.now().getTime());
      const s = sent.get(domain);
      if (!s) sent.set(domain, { minute: m, now: 1, before: 0 });
      else if (s.minute === m) s.now++;
      else sent.set(domain, { minute: m, now: 1, before: s.minute === m - 1 ? s.now : 0 });

      const row = rows.get(domain);
      if (!row) return;
      let k = streak.get(domain);
      if (!k || k.version !== row.version) streak.set(domain, (k = { version: row.version, n: 0 }));
      if (++k.n < settings.increaseAfter) return;
      k.n = 0;
      await stepUp(row).catch((err: unknown) => log.warn({ err, domain }, 'adaptive back-off: the step up could not be recorded'));
    },

    state(domain) {
      const r = settings.enabled ? rows.get(domain) : undefined;
      if (!r) return null;
      return {
        rate: r.rate,
        targetRate: Math.min(Number(r.target_rate), ceilings.get(domain) ?? Infinity),
        connections: r.connections,
        since: r.since,
        lastAnswer: r.last_answer,
        lastAnswerAt: r.last_answer_at,
        throttles: Number(r.throttles),
      };
    },

    async reset(domain) {
      const r = await db.deleteFrom('destination_pace').where('domain', '=', domain).executeTakeFirst();
      rows.delete(domain);
      return Number(r.numDeletedRows) > 0;
    },

    load,
  };
}
