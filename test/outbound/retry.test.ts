// The retry schedule (outbound/retry.ts): the delay after each deferred attempt, the last entry
// repeating, a server's own retry time, and giving up past retry.maxAge.
import t from 'tap';
import { nextAttempt, type RetryPolicy } from '../../src/outbound/retry.js';

const MIN = 60_000;
const policy: RetryPolicy = { schedule: [1 * MIN, 5 * MIN, 15 * MIN], maxAge: 60 * MIN };
const since = new Date('2030-01-01T00:00:00Z');
const at = (minutes: number) => new Date(since.getTime() + minutes * MIN);

t.test('the delay after each attempt', async (t) => {
  const cases: [number, number][] = [
    [1, 1],
    [2, 5],
    [3, 15],
    [4, 15],
    [9, 15],
    [0, 1],
    [-3, 1],
  ];
  for (const [attempt, delay] of cases)
    t.same(nextAttempt(policy, attempt, at(10), since), at(10 + delay), `attempt ${attempt}: +${delay} m`);
});

t.test('a later retry time asked by the server wins; an earlier one does not', async (t) => {
  t.same(nextAttempt(policy, 1, at(10), since, at(30)), at(30));
  t.same(nextAttempt(policy, 1, at(10), since, at(10.5)), at(10.5), 'later than now but sooner than the schedule');
  t.same(nextAttempt(policy, 1, at(10), since, at(10)), at(11), 'not later than now: the schedule');
  t.same(nextAttempt(policy, 1, at(10), since, at(5)), at(11), 'in the past: the schedule');
});

t.test('give up past maxAge, not at it', async (t) => {
  t.same(nextAttempt(policy, 3, at(45), since), at(60), 'exactly at the deadline is still tried');
  t.equal(nextAttempt(policy, 3, at(46), since), null, 'one minute past: give up');
  t.equal(nextAttempt(policy, 1, at(10), since, at(61)), null, "the server's retry time past the deadline: give up");
  t.same(nextAttempt(policy, 2, at(54), at(1)), at(59), 'the deadline counts from since');
  t.equal(nextAttempt(policy, 2, at(57), at(1)), null);
});
