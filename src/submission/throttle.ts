// The throttle of failed SMTP AUTH, per user name and per client address, kept in the database
// (`login_failures`, beside the dashboard's failed logins, under subjects of its own) so every node
// of a cluster counts the same failures. A subject has `free` failures within the window; past
// them, an attempt is looked at only once 1 s has passed since the last failure, and each further
// failure doubles that (2 s, 4 s, …, at most the window). A guesser gets a handful of tries, then
// one an hour; a client with a stale password in its config keeps failing slowly, not forever fast.
import type { Deps } from '../deps.js';

export interface AuthThrottle {
  /** Seconds before an AUTH for `user` from `ip` may be looked at; 0: now. */
  wait(user: string, ip: string): Promise<number>;
  /** Counts a failed AUTH against both. */
  failed(user: string, ip: string): Promise<void>;
}

export interface ThrottleSettings {
  windowMs: number;
  freePerUser: number;
  freePerAddress: number;
}

const PREFIX = 'smtp-';
const subjects = (user: string, ip: string) => ({
  user: `${PREFIX}user:${user.trim().toLowerCase().slice(0, 254)}`,
  address: `${PREFIX}address:${ip}`,
});

/** The wait, in ms from `now`, after `n` failures within the window, the last at `last`. */
export function throttleWait(n: number, last: number, free: number, windowMs: number, now: number): number {
  if (n < free) return 0;
  const delay = Math.min(windowMs, 1000 * 2 ** Math.min(n - free, 40));
  return Math.max(0, last + delay - now);
}

export function createAuthThrottle(deps: Pick<Deps, 'db' | 'clock'>, settings: ThrottleSettings): AuthThrottle {
  const { db, clock } = deps;

  async function failures(subject: string, since: string): Promise<{ n: number; last: number }> {
    const r = await db
      .selectFrom('login_failures')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('at').as('last')])
      .where('subject', '=', subject)
      .where('at', '>', since)
      .executeTakeFirstOrThrow();
    return { n: Number(r.n), last: r.last ? Date.parse(r.last) : 0 };
  }

  return {
    async wait(user, ip) {
      const now = clock.now().getTime();
      const since = new Date(now - settings.windowMs).toISOString();
      const s = subjects(user, ip);
      const [byUser, byAddress] = await Promise.all([failures(s.user, since), failures(s.address, since)]);
      const ms = Math.max(
        throttleWait(byUser.n, byUser.last, settings.freePerUser, settings.windowMs, now),
        throttleWait(byAddress.n, byAddress.last, settings.freePerAddress, settings.windowMs, now),
      );
      return Math.ceil(ms / 1000);
    },
    async failed(user, ip) {
      const now = clock.now();
      const at = now.toISOString();
      const s = subjects(user, ip);
      await db
        .insertInto('login_failures')
        .values([
          { subject: s.user, at },
          { subject: s.address, at },
        ])
        .execute();
      const since = new Date(now.getTime() - settings.windowMs).toISOString();
      await db.deleteFrom('login_failures').where('subject', 'like', `${PREFIX}%`).where('at', '<=', since).execute();
    },
  };
}
