// Warm-up (docs/deliverability.md, "Warm-up"): a new source address sending for a domain starts
// with a small daily allowance and climbs `delivery.warmUp.curve`, one step per UTC day, until the
// curve ends and the pair is warm (no limit from here on). Receivers trust an address by its
// history; mail over the day's allowance is deferred to the next day, not failed, at a time spread
// over the next `spreadOver` by the message id, so a backlog does not all arrive at midnight.
//
// The allowance holds for the cluster: each message takes one unit of a shared budget
// (cluster/budgets.ts) keyed by the pair, the UTC day and the allowance; the sends counted in the
// database (`warm_up_counts`) also stop a pair whose allowance was lowered during the day.
//
// The ramp watches the pair's own mail: its bounce, deferral and complaint rates over the last
// `window` (at least `minSample` answers). When one crosses its threshold the ramp pauses — the
// step does not advance — and steps back `stepBack` steps at once; when the rates are back under
// their thresholds (older answers leave the window, new deliveries go through) it resumes on its
// own and climbs again from the next day.
import type { Budgets } from '../../cluster/index.js';
import type { Config } from '../../config.js';
import type { Db } from '../../db/index.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { ScheduleView } from '../../contract/warm-up.js';
import { hashIndex } from './sources.js';

const DAY_MS = 24 * 3600 * 1000;
const HOUR_MS = 3600 * 1000;
// The budget of a day never refills within the day: a token takes a thousand days to come back.
const NO_REFILL_MS = 1000 * DAY_MS;
const WARM_RECHECK_MS = 60_000;

export type WarmUpSettings = Config['delivery']['warmUp'];
export type WarmUpOutcome = 'delivered' | 'bounced' | 'deferred' | 'complained';

export interface WarmUp {
  /** Whether mail from this source is under warm-up. */
  applies(source: string): boolean;
  /**
   * Takes one message of today's allowance of (source, sending domain): null when it may go now,
   * else why not and when to try again.
   */
  take(source: string, sendingDomain: string, messageId: string): Promise<{ reason: string; retryAt: Date } | null>;
  /** Counts an answer of a receiver to the pair's mail. */
  record(source: string, sendingDomain: string, outcome: WarmUpOutcome, n?: number): Promise<void>;
  /** A later report about a message (a complaint, a bounce after acceptance): counted for the pair that sent it. */
  report(messageId: string, outcome: 'complained' | 'bounced'): Promise<void>;
  list(): Promise<ScheduleView[]>;
  /**
   * The operator's override: puts the pair at `step` (0-based; the curve's length is warm) from
   * today, unpaused; the rates decide again from the next message on.
   */
  set(source: string, sendingDomain: string, step: number): Promise<ScheduleView>;
}

export interface WarmUpDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  budgets: Budgets;
  settings: WarmUpSettings;
  /** The configured source names (every one is warmed up when settings.sources is empty). */
  sources: string[];
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const hourOf = (ms: number) => new Date(ms).toISOString().slice(0, 13);
const dayStart = (day: string) => Date.parse(`${day}T00:00:00.000Z`);
const daysBetween = (from: string, to: string) => Math.round((dayStart(to) - dayStart(from)) / DAY_MS);

interface Row {
  source: string;
  sending_domain: string;
  step: number;
  step_day: string;
  paused_reason: string | null;
  paused_at: string | null;
  started_at: string;
}

interface Recent {
  delivered: number;
  bounced: number;
  deferred: number;
  complained: number;
}

/** Why the rates over the window pause the ramp, or null. */
export function tripReason(r: Recent, s: Pick<WarmUpSettings, 'minSample' | 'maxBounceRate' | 'maxComplaintRate' | 'maxDeferralRate'>) {
  const answers = r.delivered + r.bounced + r.deferred;
  if (answers < s.minSample) return null;
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const bounce = r.bounced / answers;
  if (bounce > s.maxBounceRate) return `bounce rate ${pct(bounce)} over ${pct(s.maxBounceRate)}`;
  const complaint = r.complained / Math.max(1, r.delivered);
  if (complaint > s.maxComplaintRate) return `complaint rate ${pct(complaint)} over ${pct(s.maxComplaintRate)}`;
  const deferral = r.deferred / answers;
  if (deferral > s.maxDeferralRate) return `deferral rate ${pct(deferral)} over ${pct(s.maxDeferralRate)}`;
  return null;
}

export function createWarmUp(deps: WarmUpDeps): WarmUp {
  const { db, clock, log, settings } = deps;
  const curve = settings.curve;
  const warmed = settings.sources.length ? new Set(settings.sources) : new Set(deps.sources);
  // Pairs past the end of the curve: no database work for their mail for a minute at a time (an
  // operator's `warm-up set` on any node reaches every node within that minute).
  const warmUntil = new Map<string, number>();
  const isWarm = (key: string) => (warmUntil.get(key) ?? 0) > clock.now().getTime();
  const budget = (allowance: number) => deps.budgets.budget('warm-up', { count: allowance, perMs: NO_REFILL_MS });
  let purgedHour = '';

  async function recent(source: string, domain: string, now: number): Promise<Recent> {
    const since = hourOf(now - settings.window + HOUR_MS);
    const r = await db
      .selectFrom('warm_up_counts')
      .select((eb) => [
        eb.fn.sum<number>('delivered').as('delivered'),
        eb.fn.sum<number>('bounced').as('bounced'),
        eb.fn.sum<number>('deferred').as('deferred'),
        eb.fn.sum<number>('complained').as('complained'),
      ])
      .where('source', '=', source)
      .where('sending_domain', '=', domain)
      .where('hour', '>=', since)
      .executeTakeFirst();
    return {
      delivered: Number(r?.delivered ?? 0),
      bounced: Number(r?.bounced ?? 0),
      deferred: Number(r?.deferred ?? 0),
      complained: Number(r?.complained ?? 0),
    };
  }

  async function usedOn(source: string, domain: string, day: string): Promise<number> {
    const r = await db
      .selectFrom('warm_up_counts')
      .select((eb) => eb.fn.sum<number>('sent').as('sent'))
      .where('source', '=', source)
      .where('sending_domain', '=', domain)
      .where('hour', '>=', `${day}T00`)
      .where('hour', '<=', `${day}T23`)
      .executeTakeFirst();
    return Number(r?.sent ?? 0);
  }

  async function save(row: Row, now: number): Promise<void> {
    const values = {
      step: row.step,
      step_day: row.step_day,
      paused_reason: row.paused_reason,
      paused_at: row.paused_at,
      updated_at: new Date(now).toISOString(),
    };
    await db
      .insertInto('warm_up_schedules')
      .values({ source: row.source, sending_domain: row.sending_domain, started_at: row.started_at, ...values })
      .onConflict((oc) => oc.columns(['source', 'sending_domain']).doUpdateSet(values))
      .execute();
  }

  // The pair's schedule as of now: started on first use, moved on by the days passed, paused or
  // resumed by the rates over the window. Written back when any of that changed it.
  async function current(source: string, domain: string, now: number): Promise<{ row: Row; recent: Recent }> {
    const today = dayOf(now);
    const found = await db
      .selectFrom('warm_up_schedules')
      .selectAll()
      .where('source', '=', source)
      .where('sending_domain', '=', domain)
      .executeTakeFirst();
    const row: Row = found
      ? { ...found, step: Number(found.step) }
      : {
          source,
          sending_domain: domain,
          step: 0,
          step_day: today,
          paused_reason: null,
          paused_at: null,
          started_at: new Date(now).toISOString(),
        };
    let changed = !found;
    const rates = await recent(source, domain, now);
    const trip = tripReason(rates, settings);
    if (trip && !row.paused_reason) {
      row.paused_reason = trip;
      row.paused_at = new Date(now).toISOString();
      row.step = Math.max(0, Math.min(row.step, curve.length) - settings.stepBack);
      row.step_day = today;
      changed = true;
      log.warn({ source, domain, reason: trip, allowance: curve[row.step] }, 'warm-up paused');
    } else if (!trip && row.paused_reason) {
      row.paused_reason = null;
      row.paused_at = null;
      row.step_day = today;
      changed = true;
      log.info({ source, domain }, 'warm-up resumed');
    } else if (!row.paused_reason && row.step_day < today) {
      row.step = Math.min(curve.length, row.step + daysBetween(row.step_day, today));
      row.step_day = today;
      changed = true;
    } else if (row.paused_reason && row.step_day < today) {
      // Days spent paused do not climb.
      row.step_day = today;
      changed = true;
    }
    if (changed) await save(row, now);
    return { row, recent: rates };
  }

  // Counts older than the window (and the message map) are of no further use.
  async function purge(now: number): Promise<void> {
    const hour = hourOf(now);
    if (hour === purgedHour) return;
    purgedHour = hour;
    const before = hourOf(now - Math.max(settings.window, DAY_MS) - DAY_MS);
    await db.deleteFrom('warm_up_counts').where('hour', '<', before).execute();
    await db.deleteFrom('warm_up_messages').where('hour', '<', before).execute();
  }

  async function add(source: string, domain: string, hour: string, column: 'sent' | WarmUpOutcome, n: number): Promise<void> {
    await db
      .insertInto('warm_up_counts')
      .values({ source, sending_domain: domain, hour, [column]: n })
      .onConflict((oc) =>
        oc.columns(['source', 'sending_domain', 'hour']).doUpdateSet((eb) => ({ [column]: eb(`warm_up_counts.${column}`, '+', n) })),
      )
      .execute();
  }

  async function view(source: string, domain: string, now: number): Promise<ScheduleView> {
    const today = dayOf(now);
    const { row, recent: r } = await current(source, domain, now);
    const warmNow = row.step >= curve.length;
    const nextDay = dayOf(dayStart(today) + DAY_MS);
    return {
      source: row.source,
      sendingDomain: row.sending_domain,
      step: Math.min(row.step, curve.length),
      steps: curve.length,
      day: today,
      allowance: warmNow ? null : curve[row.step],
      used: await usedOn(row.source, row.sending_domain, today),
      next: warmNow || row.paused_reason ? null : { day: nextDay, allowance: row.step + 1 < curve.length ? curve[row.step + 1] : null },
      pausedReason: row.paused_reason,
      pausedAt: row.paused_at,
      startedAt: row.started_at,
      recent: { ...r, windowHours: settings.window / HOUR_MS },
    };
  }

  return {
    applies: (source) => warmed.has(source),

    async take(source, sendingDomain, messageId) {
      const domain = sendingDomain.toLowerCase();
      const key = `${source} ${domain}`;
      if (!warmed.has(source) || isWarm(key)) return null;
      const now = clock.now().getTime();
      await purge(now).catch((err: unknown) => log.warn({ err }, 'warm-up: old counts not purged'));
      const { row } = await current(source, domain, now);
      if (row.step >= curve.length) {
        warmUntil.set(key, now + WARM_RECHECK_MS);
        return null;
      }
      const allowance = curve[row.step];
      const today = dayOf(now);
      // A retry of a message already counted today (its MX could not be reached) is not counted twice.
      const counted = await db.selectFrom('warm_up_messages').selectAll().where('message_id', '=', messageId).executeTakeFirst();
      if (counted && counted.source === source && counted.sending_domain === domain && counted.hour.startsWith(today)) return null;
      const used = await usedOn(source, domain, today);
      const granted = used < allowance && (await budget(allowance).take(`${source}|${domain}|${today}|${allowance}`)) === 0;
      if (!granted) {
        const tomorrow = dayStart(today) + DAY_MS;
        const retryAt = new Date(tomorrow + (settings.spreadOver > 0 ? hashIndex(messageId, settings.spreadOver) : 0));
        return {
          reason: `warm-up of ${source} for ${domain}: today's allowance of ${allowance} is used; next try ${retryAt.toISOString()}`,
          retryAt,
        };
      }
      const hour = hourOf(now);
      await add(source, domain, hour, 'sent', 1);
      await db
        .insertInto('warm_up_messages')
        .values({ message_id: messageId, source, sending_domain: domain, hour })
        .onConflict((oc) => oc.column('message_id').doUpdateSet({ source, sending_domain: domain, hour }))
        .execute();
      return null;
    },

    async record(source, sendingDomain, outcome, n = 1) {
      const domain = sendingDomain.toLowerCase();
      if (!warmed.has(source) || isWarm(`${source} ${domain}`) || n <= 0) return;
      await add(source, domain, hourOf(clock.now().getTime()), outcome, n);
    },

    async report(messageId, outcome) {
      const m = await db.selectFrom('warm_up_messages').selectAll().where('message_id', '=', messageId).executeTakeFirst();
      if (!m) return;
      await add(m.source, m.sending_domain, hourOf(clock.now().getTime()), outcome, 1);
    },

    async list() {
      const now = clock.now().getTime();
      const pairs = await db
        .selectFrom('warm_up_schedules')
        .select(['source', 'sending_domain'])
        .orderBy('source')
        .orderBy('sending_domain')
        .execute();
      const views: ScheduleView[] = [];
      for (const p of pairs) views.push(await view(p.source, p.sending_domain, now));
      return views;
    },

    async set(source, sendingDomain, step) {
      const domain = sendingDomain.toLowerCase();
      const now = clock.now().getTime();
      const { row } = await current(source, domain, now);
      await save(
        { ...row, step: Math.max(0, Math.min(step, curve.length)), step_day: dayOf(now), paused_reason: null, paused_at: null },
        now,
      );
      warmUntil.delete(`${source} ${domain}`);
      log.info({ source, domain, step }, 'warm-up step set by the operator');
      return view(source, domain, now);
    },
  };
}
