// The inbound half of the TLS summary: the STARTTLS sessions senders opened to our MX listener,
// counted per UTC day, MX host name and result, as RFC 8460 reporters count our outbound sessions
// (the outbound half comes from the reports they mail us, store.ts). A session is counted when it
// ends; it costs no database write: counts gather in memory and are added to the database
// `reports.inboundTlsFlush` after the first count since the last flush (and at shutdown, and
// before a summary is read), one upsert per (day, host, result) that adds to what is there, so the
// nodes of a cluster add up. A flush that fails keeps its counts for the next one.
//
// The host is the name the listener greets as (`hostname`): the receiving domain is not known when
// STARTTLS is spoken (it comes with RCPT TO, after it), and the certificate presented is the host's.
import type { InboundTlsFailure } from '../contract/report-schemas.js';
import type { Deps } from '../deps.js';

export type InboundTlsOutcome = 'successful' | InboundTlsFailure;

export interface InboundTlsDay {
  /** The MX host name the sessions were opened to. */
  hostname: string;
  day: string;
  successful: number;
  failed: number;
  /** Failed sessions by result type. */
  failures: Partial<Record<InboundTlsFailure, number>>;
}

export interface InboundTls {
  /** Counts one STARTTLS session of the MX listener, in memory (no database write). */
  count(outcome: InboundTlsOutcome): void;
  /** Adds the counts gathered so far to the database (flushes run one after the other). */
  flush(): Promise<void>;
  /** The days from..to (UTC, inclusive), every host, this node's pending counts included. */
  summary(q: { from: string; to: string }): Promise<InboundTlsDay[]>;
  /** Stops the periodic flush and flushes what is left. */
  close(): Promise<void>;
}

export function createInboundTls(
  deps: Pick<Deps, 'db' | 'clock' | 'log'> & { hostname: string; flushEveryMs: number },
): InboundTls {
  const { db, clock, log, hostname } = deps;
  // `${day} ${result}` → sessions not yet in the database. A handful of keys a day, whatever the traffic.
  const pending = new Map<string, number>();
  // The flush is armed by the first count after a flush, so nothing runs until the MX listener
  // counts a session: a process that never serves (the CLI, a daemon before start()) has no timer.
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  const add = (key: string, n: number) => {
    pending.set(key, (pending.get(key) ?? 0) + n);
    if (timer || closed) return;
    timer = setTimeout(() => {
      timer = null;
      void flushLogged();
    }, deps.flushEveryMs);
    timer.unref();
  };

  let flushing: Promise<void> = Promise.resolve();
  function flush(): Promise<void> {
    flushing = flushing.catch(() => {}).then(writePending);
    return flushing;
  }
  async function writePending(): Promise<void> {
    if (pending.size === 0) return;
    const batch = [...pending];
    pending.clear();
    for (let i = 0; i < batch.length; i++) {
      const [key, sessions] = batch[i];
      const [day, result] = key.split(' ');
      try {
        await db
          .insertInto('inbound_tls_sessions')
          .values({ day, hostname, result, sessions })
          .onConflict((oc) =>
            oc.columns(['day', 'hostname', 'result']).doUpdateSet((eb) => ({ sessions: eb('inbound_tls_sessions.sessions', '+', sessions) })),
          )
          .execute();
      } catch (err) {
        // This one and those after it wait for the next flush.
        for (const [k, n] of batch.slice(i)) add(k, n);
        throw err;
      }
    }
  }
  const flushLogged = () => flush().catch((err: unknown) => log.warn({ err }, 'inbound TLS counts not saved yet; kept for the next flush'));

  return {
    count(outcome) {
      add(`${clock.now().toISOString().slice(0, 10)} ${outcome}`, 1);
    },
    flush,
    async summary({ from, to }) {
      await flushLogged();
      const rows = await db
        .selectFrom('inbound_tls_sessions')
        .select(['day', 'hostname', 'result', 'sessions'])
        .where('day', '>=', from)
        .where('day', '<=', to)
        .execute();
      const days = new Map<string, InboundTlsDay>();
      for (const r of rows) {
        const key = `${r.hostname} ${r.day}`;
        let d = days.get(key);
        if (!d) {
          d = { hostname: r.hostname, day: r.day, successful: 0, failed: 0, failures: {} };
          days.set(key, d);
        }
        const n = Number(r.sessions);
        if (r.result === 'successful') {
          d.successful += n;
        } else {
          d.failed += n;
          const type = r.result as InboundTlsFailure;
          d.failures[type] = (d.failures[type] ?? 0) + n;
        }
      }
      return [...days.values()].sort((a, b) => a.hostname.localeCompare(b.hostname) || a.day.localeCompare(b.day));
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await flushLogged();
    },
  };
}
