// Budgets: "so many per so long, per key" limits that must hold for the appliance as a whole, not
// per process — API requests per key (http/rate-limit.ts), messages per destination domain
// (channels/email/rates.ts). Where they are kept follows the deployment:
//
// - SQLite (one node): in this process, a token bucket per key on the application clock (a burst
//   of the whole rate, refilled continuously). No round trip.
// - PostgreSQL: the same token bucket in the `budgets` table (migration 0019), one upsert per take
//   on the application clock, so every node draws from the same bucket and a budget means the
//   same thing as on one node (the dispatcher's retry times and the tests' clock agree with it).
// - `redisUrl` set: rate-limiter-flexible's Redis store, one round trip to Redis instead of to
//   the database (for clusters whose database is the bottleneck). It counts fixed windows of the
//   period on the wall clock (60/min: 60 per minute from the first take), as the library does; a
//   refused take still counts, and a key over its budget is refused from memory until its window
//   ends, without a round trip.
//
// When the shared store cannot be reached, each node falls back to its own in-process bucket
// (logged once per outage) rather than refuse all traffic or let it all through.
import type { Redis as RedisClient } from 'ioredis';
import { pgLib } from '../db/index.js';
import type * as IORedis from 'ioredis';
import { lazyRequire } from '../lib/lazy.js';
import type * as RateLimiterFlexible from 'rate-limiter-flexible';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

// Both only with Redis (lib/lazy.ts).
const ioredis = lazyRequire<typeof IORedis>('ioredis');
const rlf = lazyRequire<typeof RateLimiterFlexible>('rate-limiter-flexible');

export interface Rate {
  count: number;
  perMs: number;
}

export interface Budget {
  /** Takes one unit of key's budget: 0 when granted, else the ms until the budget has room again. */
  take(key: string): Promise<number>;
}

export interface Budgets {
  /** Where budgets are kept: `node` (this process only) or `cluster` (shared by every node). */
  readonly scope: 'node' | 'cluster';
  readonly store: 'memory' | 'postgres' | 'redis';
  /** The budget `name` of `rate` per key. A rate of 0 refuses every take. */
  budget(name: string, rate: Rate): Budget;
  /**
   * Resolves once the shared store has answered or failed for the first time: takes before then
   * would be kept per node (the daemon's start waits for it).
   */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export interface BudgetsOptions {
  /** The PostgreSQL URL when the database is PostgreSQL. */
  databaseUrl?: string;
  redisUrl?: string;
  clock: Clock;
  log: Logger;
}

/** An in-process token bucket per key, on the application clock. */
export function memoryBudget(rate: Rate, clock: Clock): Budget {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key) {
      if (rate.count <= 0) return Promise.resolve(rate.perMs);
      const now = clock.now().getTime();
      let b = buckets.get(key);
      if (!b) {
        if (buckets.size > 100_000) buckets.clear();
        b = { tokens: rate.count, at: now };
        buckets.set(key, b);
      }
      b.tokens = Math.min(rate.count, b.tokens + ((now - b.at) * rate.count) / rate.perMs);
      b.at = now;
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return Promise.resolve(0);
      }
      return Promise.resolve(Math.ceil(((1 - b.tokens) * rate.perMs) / rate.count));
    },
  };
}

export function createBudgets(opts: BudgetsOptions): Budgets {
  const { clock, log } = opts;
  if (opts.redisUrl) {
    const redis: RedisClient = new (ioredis().Redis)(opts.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: false,
    });
    let down = false;
    redis.on('error', (err: Error) => {
      if (!down) log.warn({ err: err.message }, 'Redis is unreachable; budgets are kept per node until it is back');
      down = true;
    });
    redis.on('ready', () => (down = false));
    // Commands are not queued while Redis is away (each node falls back at once), so until the
    // first connection is made a take would be answered in process: the start waits for it, or
    // for its first failure.
    const first = new Promise<void>((resolve) => {
      redis.once('ready', () => resolve());
      redis.once('error', () => resolve());
    });
    return {
      scope: 'cluster',
      store: 'redis',
      ready: () => first,
      budget(name, rate) {
        if (rate.count <= 0) return memoryBudget(rate, clock);
        const window = { keyPrefix: `postern:${name}`, ...windowOf(rate) };
        const { RateLimiterRedis, RateLimiterMemory } = rlf();
        // The insurance limiter answers in process while Redis cannot be reached.
        const limiter = new RateLimiterRedis({ storeClient: redis, ...window, insuranceLimiter: new RateLimiterMemory(window) });
        return {
          async take(key) {
            try {
              await limiter.consume(key, 1);
              return 0;
            } catch (res) {
              if (res instanceof rlf().RateLimiterRes) return Math.max(1, res.msBeforeNext);
              // The insurance limiter answers when the store fails; this is a failure of both.
              log.warn({ err: res, budget: name }, 'a budget could not be checked; the request is let through');
              return 0;
            }
          },
        };
      },
      close() {
        redis.disconnect();
        return Promise.resolve();
      },
    };
  }
  if (opts.databaseUrl) {
    // Its own small pool: a take never waits behind the dispatcher's queries for a connection.
    const pool = new (pgLib().Pool)({ connectionString: opts.databaseUrl, max: 4 });
    pool.on('error', () => {});
    let down = false;
    return {
      scope: 'cluster',
      store: 'postgres',
      budget(name, rate) {
        if (rate.count <= 0) return memoryBudget(rate, clock);
        const fallback = memoryBudget(rate, clock);
        const perMs = rate.count / rate.perMs;
        return {
          async take(key) {
            try {
              const r = await pool.query<{ tokens: number; granted: boolean }>(TAKE, [
                `${name}:${key}`,
                rate.count,
                clock.now().getTime(),
                perMs,
              ]);
              down = false;
              const { tokens, granted } = r.rows[0];
              return granted ? 0 : Math.max(1, Math.ceil((1 - tokens) / perMs));
            } catch (err) {
              if (!down) log.warn({ err, budget: name }, 'budgets in PostgreSQL cannot be reached; kept per node until they can');
              down = true;
              return fallback.take(key);
            }
          },
        };
      },
      ready: () => Promise.resolve(),
      close: () => pool.end(),
    };
  }
  // One bucket per name and rate, as the shared stores keep them: the API and SMTP submission draw
  // from the same `api-send` budget of a key.
  const named = new Map<string, Budget>();
  const budget = (name: string, rate: Rate) => {
    const id = `${name}:${rate.count}/${rate.perMs}`;
    let b = named.get(id);
    if (!b) named.set(id, (b = memoryBudget(rate, clock)));
    return b;
  };
  return { scope: 'node', store: 'memory', budget, ready: () => Promise.resolve(), close: async () => {} };
}

// One token bucket per key in one upsert: refilled for the time since its last take at the
// application clock's now ($3), capped at the rate's count ($2, also a new bucket's content), then
// one token taken when there is one. `granted` says which. $4 is the refill per millisecond. The
// bucket's time only moves forward: takes whose `now` was read before another's commit would
// otherwise refill the same interval twice.
const TAKE = `
INSERT INTO budgets AS b (key, tokens, at, granted) VALUES ($1, $2::float8 - 1, $3::bigint, true)
ON CONFLICT (key) DO UPDATE SET
  tokens = LEAST($2::float8, b.tokens + GREATEST(0, $3::bigint - b.at) * $4::float8)
    - CASE WHEN LEAST($2::float8, b.tokens + GREATEST(0, $3::bigint - b.at) * $4::float8) >= 1 THEN 1 ELSE 0 END,
  granted = LEAST($2::float8, b.tokens + GREATEST(0, $3::bigint - b.at) * $4::float8) >= 1,
  at = GREATEST(b.at, $3::bigint)
RETURNING tokens, granted`;

/** rate-limiter-flexible's window: `count` points per `perMs`, in whole seconds (at least 1). */
function windowOf(rate: Rate): { points: number; duration: number; inMemoryBlockOnConsumed: number } {
  const duration = Math.max(1, Math.round(rate.perMs / 1000));
  // Over budget: refused from memory until the window ends, without a round trip per request.
  return { points: rate.count, duration, inMemoryBlockOnConsumed: rate.count + 1 };
}
