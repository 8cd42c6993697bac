// The API's rate budgets per key (http/rate-limit.ts) and the in-process token bucket they are kept
// in on one node (cluster/budgets.ts, `memoryBudget`), without a daemon: reads (GET, HEAD) and
// everything else draw from two budgets of their own, a rate of 0 is no budget, the key is the
// request's principal, and a refusal is `rate_limited` with the limit and the seconds to wait. The
// bucket holds a burst of the whole rate and refills continuously on the application clock.
import type { Request, Response } from 'express';
import t from 'tap';
import { createBudgets, memoryBudget, type Budget, type Rate } from '../../src/cluster/budgets.js';
import { rateLimit } from '../../src/http/rate-limit.js';
import { ManualClock } from '../helpers/clock.js';
import { AppError } from '../../src/lib/errors.js';
import { createLogger } from '../../src/lib/logger.js';

t.test('the in-process bucket: a burst of the rate, refilled continuously, the wait to the next token', async (t) => {
  const clock = new ManualClock('2026-01-01T00:00:00Z');
  const b = memoryBudget({ count: 2, perMs: 60_000 }, clock);
  t.same([await b.take('k'), await b.take('k')], [0, 0], 'the burst');
  t.equal(await b.take('k'), 30_000, 'then half a minute for the next token');
  clock.advance(15_000);
  t.equal(await b.take('k'), 15_000, 'half a token refilled: the rest of the wait');
  clock.advance(15_000);
  t.equal(await b.take('k'), 0, 'a whole token');
  t.equal(await b.take('k'), 30_000);
  clock.advance(600_000);
  t.same([await b.take('k'), await b.take('k'), await b.take('k')], [0, 0, 30_000], 'refilled up to the burst, no more');
  t.equal(await b.take('other'), 0, 'each key its own bucket');
  t.equal(await b.take('k'), 30_000, "and a new key's bucket leaves the others as they were");
  t.equal(await memoryBudget({ count: 0, perMs: 1000 }, clock).take('k'), 1000, 'a rate of nothing refuses');

  const node = createBudgets({ clock, log: createLogger('silent') });
  t.equal(node.scope, 'node');
  t.equal(node.store, 'memory');
  await node.ready();
  const rate = { count: 1, perMs: 1000 };
  t.equal(await node.budget('api-send', rate).take('key'), 0);
  t.equal(await node.budget('api-send', rate).take('key'), 1000, 'one bucket per name and rate: the API and SMTP share it');
  t.equal(await node.budget('api-read', rate).take('key'), 0, 'another name, another bucket');
  t.equal(await node.budget('api-send', { count: 2, perMs: 1000 }).take('key'), 0, 'another rate, another bucket');
  await node.close();
});

/** Budgets that record what was taken and answer the waits the test sets. */
function recording() {
  const made: { name: string; rate: Rate }[] = [];
  const taken: string[] = [];
  const waits: number[] = [];
  return {
    made,
    taken,
    waits,
    budgets: {
      budget(name: string, rate: Rate): Budget {
        made.push({ name, rate });
        return {
          take: (key) => {
            taken.push(`${name}:${key}`);
            return Promise.resolve(waits.shift() ?? 0);
          },
        };
      },
    } as Parameters<typeof rateLimit>[1],
  };
}

/** Runs the middleware for a request of `method` by the key `keyId`: passed on, or the error it threw. */
async function through(mw: ReturnType<typeof rateLimit>, method: string, keyId = 'key_1'): Promise<'next' | AppError> {
  let passed = false;
  try {
    await mw({ method } as Request, { locals: { principal: { keyId } } } as unknown as Response, () => void (passed = true));
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  return passed ? 'next' : (null as never);
}

t.test('reads and everything else draw from budgets of their own, per key', async (t) => {
  const r = recording();
  const mw = rateLimit({ send: 5, read: 20 }, r.budgets);
  t.same(r.made, [
    { name: 'api-send', rate: { count: 5, perMs: 1000 } },
    { name: 'api-read', rate: { count: 20, perMs: 1000 } },
  ]);
  for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) t.equal(await through(mw, method), 'next', method);
  t.equal(await through(mw, 'GET', 'key_2'), 'next');
  t.same(r.taken, [
    'api-read:key_1',
    'api-read:key_1',
    'api-send:key_1',
    'api-send:key_1',
    'api-send:key_1',
    'api-send:key_1',
    'api-read:key_2',
  ]);
});

t.test('a rate of 0 is no budget: nothing is taken', async (t) => {
  const r = recording();
  const mw = rateLimit({ send: 0, read: 3 }, r.budgets);
  t.same(
    r.made.map((m) => m.name),
    ['api-read'],
  );
  t.equal(await through(mw, 'POST'), 'next');
  t.same(r.taken, [], 'a send takes nothing');
  const none = recording();
  const open = rateLimit({ send: 2, read: 0 }, none.budgets);
  t.equal(await through(open, 'GET'), 'next');
  t.same(none.taken, [], 'a read takes nothing');
});

t.test('over budget: rate_limited, with the limit and the whole seconds to wait', async (t) => {
  const r = recording();
  const mw = rateLimit({ send: 2.5, read: 20 }, r.budgets);
  r.waits.push(1, 2500, 0);
  for (const [method, want] of [
    ['POST', { message: 'rate limit of 2.5 send requests per second exceeded', limit: 3, retryAfter: 1 }],
    ['POST', { message: 'rate limit of 2.5 send requests per second exceeded', limit: 3, retryAfter: 3 }],
  ] as const) {
    const err = await through(mw, method);
    t.ok(err instanceof AppError, 'refused');
    const e = err as AppError;
    t.same({ code: e.code, message: e.message, limit: e.extra.limit, retryAfter: e.retryAfter }, { code: 'rate_limited', ...want });
  }
  t.equal(await through(mw, 'POST'), 'next', 'a wait of 0 passes');
  r.waits.push(999);
  const read = (await through(mw, 'GET')) as AppError;
  t.same([read.message, read.extra.limit, read.retryAfter], ['rate limit of 20 read requests per second exceeded', 20, 1]);
});
