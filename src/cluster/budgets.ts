// Budgets: "so many per so long, per key" limits that must hold for the appliance as a whole, not
// per process — API requests per key (http/rate-limit.ts), messages per destination domain
// (channels/email/rates.ts). Where they are kept follows the deployment:
//
// - SQLite (one node): in this process, a token bucket per key on the application clock (a burst
//   of the whole rate, refilled continuously). No round trip.
// - PostgreSQL: rate-limiter-flexible's PostgreSQL store in the `budgets` table (migration 0019),
//   one upsert per take, so every node draws from the same window.
// - `redisUrl` set: rate-limiter-flexible's Redis store, one round trip to Redis instead of to
//   the database (for clusters whose database is the bottleneck).
//
// The shared stores count fixed windows of the period (60/min: 60 per minute starting at the first
// take), as the library does; a refused take still counts, so a client hammering past its budget
// stays refused until the window ends. Once a key is over, this node refuses it from memory for
// the rest of the window without asking the store. When the store cannot be reached, each node
// falls back to its own in-process bucket (logged once per outage) rather than refuse all traffic
// or let it all through.
import { Redis } from 'ioredis';
import pg from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

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
    const redis = new Redis(opts.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
    let down = false;
    redis.on('error', (err: Error) => {
      if (!down) log.warn({ err: err.message }, 'Redis is unreachable; budgets are kept per node until it is back');
      down = true;
    });
    redis.on('ready', () => (down = false));
    return shared(
      'redis',
      (name, rate, insuranceLimiter) =>
        new RateLimiterRedis({ storeClient: redis, keyPrefix: `postern:${name}`, ...windowOf(rate), insuranceLimiter }),
      () => {
        redis.disconnect();
        return Promise.resolve();
      },
    );
  }
  if (opts.databaseUrl) {
    // Its own small pool: a take never waits behind the dispatcher's queries for a connection.
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 4 });
    pool.on('error', () => {});
    return shared(
      'postgres',
      (name, rate, insuranceLimiter) =>
        new RateLimiterPostgres({
          storeClient: pool,
          storeType: 'pool',
          tableName: 'budgets',
          tableCreated: true,
          // Expired windows are overwritten by the next take; the sweep only bounds the table.
          clearExpiredByTimeout: true,
          keyPrefix: `postern:${name}`,
          ...windowOf(rate),
          insuranceLimiter,
        }),
      () => pool.end(),
    );
  }
  return { scope: 'node', store: 'memory', budget: (_name, rate) => memoryBudget(rate, clock), close: async () => {} };

  function shared(
    store: 'postgres' | 'redis',
    make: (name: string, rate: Rate, insurance: RateLimiterMemory) => RateLimiterAbstract,
    close: () => Promise<void>,
  ): Budgets {
    return {
      scope: 'cluster',
      store,
      budget(name, rate) {
        if (rate.count <= 0) return memoryBudget(rate, clock);
        const limiter = make(name, rate, new RateLimiterMemory({ keyPrefix: `postern:${name}`, ...windowOf(rate) }));
        return {
          async take(key) {
            try {
              await limiter.consume(key, 1);
              return 0;
            } catch (res) {
              if (res instanceof RateLimiterRes) return Math.max(1, res.msBeforeNext);
              // The insurance limiter answers when the store fails; this is a failure of both.
              log.warn({ err: res, budget: name }, 'a budget could not be checked; the request is let through');
              return 0;
            }
          },
        };
      },
      close,
    };
  }
}

/** rate-limiter-flexible's window: `count` points per `perMs`, in whole seconds (at least 1). */
function windowOf(rate: Rate): { points: number; duration: number; inMemoryBlockOnConsumed: number } {
  const duration = Math.max(1, Math.round(rate.perMs / 1000));
  // Over budget: refused from memory until the window ends, without a round trip per request.
  return { points: rate.count, duration, inMemoryBlockOnConsumed: rate.count + 1 };
}
