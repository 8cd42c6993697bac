// Per-key request budgets, one for reads (GET/HEAD) and one for everything else, so listing
// messages never competes with sending. Rate r per second; 0 disables a budget. The budgets are
// the cluster's (cluster/budgets.ts): with several nodes on PostgreSQL or Redis a key has r per
// second in all, whichever node it reaches; on SQLite they live in this process.
import type { RequestHandler } from 'express';
import type { Budgets } from '../cluster/index.js';
import { AppError } from '../lib/errors.js';
import { principalOf } from './auth.js';

export function rateLimit(rates: { send: number; read: number }, budgets: Budgets): RequestHandler {
  const kinds = {
    send: rates.send > 0 ? budgets.budget('api-send', { count: rates.send, perMs: 1000 }) : null,
    read: rates.read > 0 ? budgets.budget('api-read', { count: rates.read, perMs: 1000 }) : null,
  };
  return async (req, res, next) => {
    const kind = req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'send';
    const budget = kinds[kind];
    if (!budget) return next();
    const wait = await budget.take(principalOf(res).keyId);
    if (wait > 0) {
      const rate = rates[kind];
      throw new AppError(
        'rate_limited',
        `rate limit of ${rate} ${kind} requests per second exceeded`,
        { limit: Math.ceil(rate) },
        Math.max(1, Math.ceil(wait / 1000)),
      );
    }
    next();
  };
}
