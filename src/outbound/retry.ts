// When to try a deferred message again: `retry.schedule` (the last entry repeats) until the
// message is `retry.maxAge` old. Defaults 1 m, 5 m, 15 m, 30 m, 1 h, 2 h, then every 4 h, for
// 5 days: about 28 attempts in all.

export interface RetryPolicy {
  /** Milliseconds. */
  schedule: number[];
  /** Milliseconds. */
  maxAge: number;
}

/** The next attempt time after attempt number `attempt` (1-based) deferred, or null to give up. */
export function nextAttempt(policy: RetryPolicy, attempt: number, now: Date, since: Date, retryAt?: Date): Date | null {
  const delayMs = policy.schedule[Math.min(Math.max(attempt, 1) - 1, policy.schedule.length - 1)];
  let next = new Date(now.getTime() + delayMs);
  if (retryAt && retryAt.getTime() > now.getTime()) next = retryAt;
  const deadline = since.getTime() + policy.maxAge;
  return next.getTime() > deadline ? null : next;
}
