// SMTP clients that passed the greeting pause, after Postfix's postscreen: a client that waited
// for the 220 greeting and then spoke SMTP has shown it is not an early-talking bot, and is greeted
// at once for `smtp.greetingPassTtl` (1 day, postscreen's `postscreen_greet_ttl`) after that. The
// pause is what capped a sender opening a connection per message (100 sessions below 1,000
// msg/s), so a repeat sender no longer pays it; first contact still does. Addresses are kept in
// memory (bounded, oldest out) and in `smtp_passed_clients`, so every node of a cluster greets a
// client another node passed; a node asks the database only for an address it does not know, and
// only while that client waits out its pause anyway.
import type { Deps } from '../deps.js';

export interface PassedClients {
  /** Whether `address` passed within the TTL: from memory when known (synchronously), else the database. */
  passed(address: string): boolean | Promise<boolean>;
  /** Records that `address` waited for the greeting and spoke SMTP. */
  pass(address: string): void;
  /** Deletes the records that ran out (a daily job); returns how many. */
  purge(): Promise<number>;
}

const MAX_IN_MEMORY = 100_000;

export function createPassedClients(deps: Pick<Deps, 'db' | 'clock' | 'log'> & { ttlMs: number; maxInMemory?: number }): PassedClients {
  const { db, clock, log, ttlMs } = deps;
  const max = deps.maxInMemory ?? MAX_IN_MEMORY;
  // Address → until (ms, application clock); insertion order is age, so the first key is the oldest.
  const known = new Map<string, number>();
  const remember = (address: string, until: number) => {
    known.delete(address);
    if (known.size >= max) known.delete(known.keys().next().value!);
    known.set(address, until);
  };

  return {
    passed(address) {
      const now = clock.now().getTime();
      const until = known.get(address);
      if (until !== undefined) {
        if (until > now) return true;
        known.delete(address);
      }
      return db
        .selectFrom('smtp_passed_clients')
        .select('passed_until')
        .where('address', '=', address)
        .executeTakeFirst()
        .then((row) => {
          const at = row ? Date.parse(row.passed_until) : 0;
          if (at <= clock.now().getTime()) return false;
          remember(address, at);
          return true;
        });
    },

    pass(address) {
      const now = clock.now().getTime();
      if ((known.get(address) ?? 0) > now) return;
      const until = now + ttlMs;
      remember(address, until);
      const passedUntil = new Date(until).toISOString();
      db.insertInto('smtp_passed_clients')
        .values({ address, passed_until: passedUntil })
        .onConflict((oc) => oc.column('address').doUpdateSet({ passed_until: passedUntil }))
        .execute()
        .catch((err: unknown) => log.warn({ err, address }, 'recording an SMTP client that passed the greeting pause failed'));
    },

    async purge() {
      const now = clock.now();
      for (const [address, until] of known) if (until <= now.getTime()) known.delete(address);
      const r = await db.deleteFrom('smtp_passed_clients').where('passed_until', '<=', now.toISOString()).executeTakeFirst();
      return Number(r.numDeletedRows);
    },
  };
}
