// Per-key token buckets, one budget for reads (GET/HEAD) and one for everything else, so listing
// messages never competes with sending. Rate r per second with a burst of r; 0 disables a budget.
// Buckets live in this process: with several nodes, each node enforces the budget on its own.
import type { RequestHandler } from 'express';
import type { Clock } from '../lib/clock.js';
import { AppError } from '../lib/errors.js';
import { principalOf } from './auth.js';

interface Bucket {
  tokens: number;
  at: number;
}

export function rateLimit(budgets: { send: number; read: number }, clock: Clock): RequestHandler {
  const buckets = new Map<string, Bucket>();
  return (req, res, next) => {
    const budget = req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'send';
    const rate = budgets[budget];
    if (rate <= 0) return next();
    const key = `${principalOf(res).keyId}:${budget}`;
    const now = clock.now().getTime();
    let b = buckets.get(key);
    if (!b) {
      if (buckets.size > 100_000) buckets.clear();
      b = { tokens: rate, at: now };
      buckets.set(key, b);
    }
    b.tokens = Math.min(rate, b.tokens + ((now - b.at) / 1000) * rate);
    b.at = now;
    if (b.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - b.tokens) / rate));
      throw new AppError(
        'rate_limited',
        `rate limit of ${rate} ${budget} requests per second exceeded`,
        { limit: Math.ceil(rate) },
        retryAfter,
      );
    }
    b.tokens -= 1;
    next();
  };
}
