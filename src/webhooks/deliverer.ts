// The webhook deliverer: a worker that drains the outbox. One pass fans new events out into
// delivery rows, then claims due deliveries with a lease (compare-and-swap on `locked_until`, so
// several nodes can share one database and a crashed node's work comes back when its lease ends)
// and sends them with undici. At most `concurrencyPerEndpoint` attempts run per endpoint across
// all nodes, so one slow receiver holds only its own slots; endpoints at their cap are left out
// of the claim query so others are never starved behind it. A 2xx within `timeout` is success;
// anything else — another status, a redirect (never followed), a timeout, a refused destination —
// schedules the next attempt from `retrySchedule`, and gives up after its last entry. An endpoint
// whose attempts have failed without a success for `disableAfter` is disabled, and that is logged.
import { performance } from 'node:perf_hooks';
import { isIP } from 'node:net';
import type * as Undici from 'undici';
import { lazyRequire } from '../lib/lazy.js';
import { sql } from 'kysely';
import { createWriteBatcher, type Db, flag, inList } from '../db/index.js';
import type { Deps } from '../deps.js';
import type { WorkerSpec } from '../lib/worker.js';
import { fanOut } from './fanout.js';
import { FORMATS } from './formats/index.js';
import { webhookSsrfPolicy } from './ssrf.js';
import { addressAllowed, BlockedDestinationError, guardedLookup } from '../lib/ssrf.js';
import type { DeliveryStatus } from '../contract/webhooks.js';

const undici = lazyRequire<typeof Undici>('undici');

export interface DelivererDeps extends Pick<Deps, 'config' | 'db' | 'dialect' | 'clock' | 'ids' | 'dns' | 'log'> {
  /**
   * The payload `data` of a stored event. Events store what they are about; an event that stores a
   * reference (message.received stores the message's id) is rendered here, at delivery.
   */
  eventPayload?: (type: string, data: string) => Promise<string>;
  /** Told of each attempt: succeeded, retrying (failed, retried later) or failed (given up), and its seconds (metrics). */
  observe?: (outcome: 'succeeded' | 'retrying' | 'failed', seconds: number) => void;
}

export interface Deliverer {
  spec: WorkerSpec;
  /** Signals that new work may be due (new events, a manual retry). */
  nudge(): void;
  /** Stops claiming and abandons attempts in flight (their leases are released, not counted). */
  stop(): void;
  /** stop(), then waits for attempts in flight to wind down and closes connections. */
  close(): Promise<void>;
}

/** The advisory lock key webhook claims take on PostgreSQL (any constant of our own). */
const WEBHOOK_CLAIM_LOCK = 0x706f7374_01;

interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export function createDeliverer(deps: DelivererDeps): Deliverer {
  const { db, clock, log } = deps;
  const cfg = deps.config.webhooks;
  const schedule = cfg.retrySchedule;
  const disableAfterMs = cfg.disableAfter;
  const policy = webhookSsrfPolicy(cfg);
  // Made at the first attempt: a daemon without endpoints never loads undici (lib/lazy.ts).
  let agent: Undici.Agent | null = null;
  const dispatcher = () =>
    (agent ??= new (undici().Agent)({
      connect: { lookup: guardedLookup(policy, deps.dns), timeout: cfg.timeout },
      headersTimeout: cfg.timeout,
      bodyTimeout: cfg.timeout,
    }));

  const inflight = new Map<string, { endpointId: string; done: Promise<void> }>();
  let stopping = false;
  const abandon = new AbortController();
  let wakeUp: (() => void) | null = null;
  // Whether the next claim looks at every endpoint, or only at those whose attempts just finished.
  let scanAll = true;
  const freed = new Set<string>();

  // A wake-up that arrives while a pass is busy (not yet waiting) must not be lost.
  let signaled = false;
  const wake = () => {
    signaled = true;
    const w = wakeUp;
    wakeUp = null;
    w?.();
  };
  const nudge = () => {
    scanAll = true;
    wake();
  };

  async function attempt(url: string, headers: Record<string, string>, body: string): Promise<AttemptOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const target = new URL(url);
    // Credentials in the URL (`https://user:pass@host/…`, how Postmark's receivers are protected)
    // go as basic authentication, never on the request line.
    if (target.username || target.password) {
      const user = `${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`;
      headers = { ...headers, authorization: `Basic ${Buffer.from(user).toString('base64')}` };
      target.username = target.password = '';
    }
    const host = target.hostname.replace(/^\[|\]$/g, '');
    // An IP literal never goes through lookup(), so the connect-time guard is applied here.
    if (isIP(host) && !addressAllowed(policy, host, host)) {
      return { statusCode: null, error: new BlockedDestinationError(host, policy).message, durationMs: 0 };
    }
    try {
      const res = await undici().request(target, {
        method: 'POST',
        dispatcher: dispatcher(),
        headers: { 'content-type': 'application/json', 'user-agent': 'Postern-Webhooks/1', ...headers },
        body,
        signal: AbortSignal.any([AbortSignal.timeout(cfg.timeout), abandon.signal]),
      });
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      const code = res.statusCode;
      if (code >= 200 && code < 300) return { statusCode: code, error: null, durationMs: elapsed() };
      const why = code >= 300 && code < 400 ? `redirect not followed (HTTP ${code})` : `HTTP ${code}`;
      return { statusCode: code, error: why, durationMs: elapsed() };
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const name =
        e.name === 'TimeoutError' || e.name === 'AbortError' || /Timeout/.test(e.code ?? '')
          ? `timeout after ${cfg.timeout} ms`
          : (e.cause?.message ?? e.message ?? String(err));
      return { statusCode: null, error: name.slice(0, 500), durationMs: elapsed() };
    }
  }

  // Attempt results that finish together share one commit (db/group-commit.ts), so many
  // concurrent attempts cost one fsync instead of one each. A group of its own, with no commit
  // window: an endpoint's next attempt waits for its last result, so waiting would cost throughput.
  const results = createWriteBatcher(db, deps.dialect);

  async function deliver(deliveryId: string, token: string): Promise<void> {
    const d = await db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .innerJoin('events as ev', 'ev.id', 'd.event_id')
      .select([
        'd.id',
        'd.attempts',
        'd.endpoint_id',
        'e.public_id as endpoint_public_id',
        'e.url',
        'e.format',
        'e.signing_key',
        'e.secret',
        'e.previous_secret',
        'e.previous_secret_expires_at',
        'e.failing_since',
        'ev.id as event_id',
        'ev.type',
        'ev.data',
        'ev.created_at',
      ])
      .where('d.id', '=', deliveryId)
      .executeTakeFirstOrThrow();

    const startedAt = clock.now();
    const data = deps.eventPayload ? await deps.eventPayload(d.type, d.data) : d.data;
    const format = FORMATS[d.format];
    const event = { id: d.event_id, type: d.type, createdAt: d.created_at, data };
    const body = format.body(event);
    const secrets = [d.secret];
    if (d.previous_secret && d.previous_secret_expires_at && d.previous_secret_expires_at > startedAt.toISOString())
      secrets.push(d.previous_secret);
    const headers = format.sign(event, body, Math.floor(startedAt.getTime() / 1000), { secrets, ecdsaKey: d.signing_key });
    const outcome = await attempt(d.url, headers, body);
    if (abandon.signal.aborted) {
      // Shutting down: the attempt did not really happen; hand the delivery back untouched.
      await db
        .updateTable('webhook_deliveries')
        .set({ locked_until: null, lock_token: null })
        .where('id', '=', d.id)
        .where('lock_token', '=', token)
        .execute();
      return;
    }

    const now = clock.now();
    const nowIso = now.toISOString();
    const attempts = d.attempts + 1;
    const ok = outcome.error === null;
    const next = ok || attempts > schedule.length ? null : new Date(now.getTime() + schedule[attempts - 1]).toISOString();
    const status: DeliveryStatus = ok ? 'succeeded' : next ? 'pending' : 'failed';

    let disable: string | null = null;
    await results.run(async (trx) => {
      const updated = await trx
        .updateTable('webhook_deliveries')
        .set({
          status,
          attempts,
          next_attempt_at: next,
          locked_until: null,
          lock_token: null,
          last_status_code: outcome.statusCode,
          last_error: outcome.error,
          updated_at: nowIso,
          delivered_at: ok ? nowIso : null,
        })
        .where('id', '=', d.id)
        .where('lock_token', '=', token)
        .executeTakeFirst();
      if (updated.numUpdatedRows === 0n) return; // the lease was lost; the new owner records its own attempt
      await trx
        .insertInto('webhook_attempts')
        .values({
          id: deps.ids.uuid(),
          delivery_id: d.id,
          attempted_at: startedAt.toISOString(),
          status_code: outcome.statusCode,
          error: outcome.error,
          duration_ms: outcome.durationMs,
        })
        .execute();
      if (ok) {
        if (d.failing_since)
          await trx.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', d.endpoint_id).execute();
        return;
      }
      const since = d.failing_since ?? startedAt.toISOString();
      if (!d.failing_since) {
        await trx
          .updateTable('webhook_endpoints')
          .set({ failing_since: since })
          .where('id', '=', d.endpoint_id)
          .where('failing_since', 'is', null)
          .execute();
      }
      if (now.getTime() - new Date(since).getTime() >= disableAfterMs) {
        disable = `disabled automatically: every attempt failed since ${since}`;
        await trx
          .updateTable('webhook_endpoints')
          .set({ enabled: flag(false), disabled_reason: disable, updated_at: nowIso })
          .where('id', '=', d.endpoint_id)
          .where('enabled', '=', flag(true))
          .execute();
      }
    });
    deps.observe?.(ok ? 'succeeded' : next ? 'retrying' : 'failed', outcome.durationMs / 1000);
    if (disable)
      log.warn({ endpoint: d.endpoint_public_id, failingSince: d.failing_since }, 'webhook endpoint disabled after failing continuously');
    log.debug(
      { endpoint: d.endpoint_public_id, event: d.event_id, status: outcome.statusCode, error: outcome.error, attempt: attempts },
      'webhook attempt',
    );
  }

  /** Attempts held per endpoint: leases in the database (all nodes) and our own in-flight ones. */
  async function busyByEndpoint(db: Db, nowIso: string): Promise<Map<string, number>> {
    const leased = await db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('locked_until', '>', nowIso)
      .where('status', '=', 'pending')
      .groupBy('endpoint_id')
      .execute();
    const busy = new Map<string, number>(leased.map((r) => [r.endpoint_id, Number(r.n)]));
    // Our own attempts count even if a moved clock made their leases look expired.
    const local = new Map<string, number>();
    for (const f of inflight.values()) local.set(f.endpointId, (local.get(f.endpointId) ?? 0) + 1);
    for (const [id, n] of local) busy.set(id, Math.max(busy.get(id) ?? 0, n));
    return busy;
  }

  const dueDeliveries = (db: Db, nowIso: string) =>
    db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .select(['d.id', 'd.endpoint_id'])
      .where('d.status', '=', 'pending')
      .where('d.next_attempt_at', '<=', nowIso)
      .where((eb) => eb.or([eb('d.locked_until', 'is', null), eb('d.locked_until', '<=', nowIso)]))
      .where('e.enabled', '=', flag(true))
      .where('e.deleted_at', 'is', null)
      .orderBy('d.next_attempt_at')
      .orderBy('d.id');

  /**
   * Counts what every node holds per endpoint and leases due deliveries within the caps. Returns
   * the deliveries won with their lease token, or null when nothing was due within the caps.
   */
  async function claim(
    q: Db,
    full: boolean,
    targets: string[],
    room: number,
  ): Promise<{ id: string; endpoint_id: string; token: string }[] | null> {
    const now = clock.now();
    const nowIso = now.toISOString();
    const busy = await busyByEndpoint(q, nowIso);
    const atCap = [...busy].filter(([, n]) => n >= cfg.concurrencyPerEndpoint).map(([id]) => id);

    let candidates: { id: string; endpoint_id: string }[] = [];
    if (full) {
      const due = atCap.length ? dueDeliveries(q, nowIso).where('d.endpoint_id', 'not in', atCap) : dueDeliveries(q, nowIso);
      candidates = await due.limit(room * 2).execute();
    } else {
      for (const ep of targets) {
        const free = cfg.concurrencyPerEndpoint - (busy.get(ep) ?? 0);
        if (free > 0) candidates.push(...(await dueDeliveries(q, nowIso).where('d.endpoint_id', '=', ep).limit(free).execute()));
      }
    }
    const chosen: { id: string; endpoint_id: string }[] = [];
    for (const c of candidates) {
      if (chosen.length >= room) break;
      if ((busy.get(c.endpoint_id) ?? 0) >= cfg.concurrencyPerEndpoint) continue;
      busy.set(c.endpoint_id, (busy.get(c.endpoint_id) ?? 0) + 1);
      chosen.push(c);
    }
    if (chosen.length === 0) return null;

    // One compare-and-swap for the batch; rows another node leased meanwhile are simply not ours.
    const token = deps.ids.uuid();
    await q
      .updateTable('webhook_deliveries')
      .set({ locked_until: new Date(now.getTime() + cfg.lease).toISOString(), lock_token: token })
      .where(
        inList(
          deps.dialect,
          'id',
          chosen.map((c) => c.id),
        ),
      )
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', nowIso)]))
      .execute();
    const won = await q.selectFrom('webhook_deliveries').select(['id', 'endpoint_id']).where('lock_token', '=', token).execute();
    return won.map((w) => ({ ...w, token }));
  }

  /**
   * Runs a claim so that no other node claims between its count and its lease: on PostgreSQL in a
   * transaction holding an advisory lock (two nodes counting at once would each see room for the
   * same slots); SQLite has one node.
   */
  function serialized<T>(fn: (q: Db) => Promise<T>): Promise<T> {
    if (deps.dialect !== 'postgres') return fn(db);
    return db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${WEBHOOK_CLAIM_LOCK})`.execute(trx);
      return fn(trx);
    });
  }

  /**
   * Claims due deliveries within the caps and starts them; returns how many it started. A full
   * scan looks at every endpoint not at its cap; after an attempt finishes, only its endpoint is
   * looked at (an indexed query), so a long backlog behind one endpoint is not rescanned per attempt.
   */
  async function claimAndLaunch(): Promise<number> {
    const room = cfg.maxInFlight - inflight.size;
    if (room <= 0 || (!scanAll && freed.size === 0)) return 0;
    const full = scanAll;
    const targets = [...freed];
    freed.clear();
    const won = await serialized((q) => claim(q, full, targets, room));
    if (won === null) {
      if (full) scanAll = false;
      return 0;
    }
    for (const c of won) {
      const done = deliver(c.id, c.token)
        .catch((err) => log.error({ err, delivery: c.id }, 'webhook delivery crashed; its lease will expire and it will be retried'))
        .finally(() => {
          inflight.delete(c.id);
          freed.add(c.endpoint_id);
          wake();
        });
      inflight.set(c.id, { endpointId: c.endpoint_id, done });
    }
    return won.length;
  }

  const waitForChange = async (): Promise<void> => {
    if (signaled) {
      signaled = false;
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      ...[...inflight.values()].map((f) => f.done),
      new Promise<void>((resolve) => (wakeUp = resolve)),
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          scanAll = true; // retries that fell due meanwhile
          resolve();
        }, cfg.pollInterval);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    wakeUp = null;
    signaled = false;
  };

  const spec: WorkerSpec = {
    name: 'webhooks',
    intervalMs: cfg.pollInterval,
    async run() {
      signaled = false;
      if (stopping) {
        await Promise.allSettled([...inflight.values()].map((f) => f.done));
        return false;
      }
      const fanned = await fanOut(db, deps);
      if (fanned > 0) scanAll = true;
      const started = await claimAndLaunch();
      if (fanned > 0 || started > 0) return true;
      if (inflight.size === 0 && freed.size === 0) {
        scanAll = true; // the next pass starts with a full look
        return false;
      }
      if (freed.size > 0) return true;
      // Attempts are in flight: wait for one to finish (or for new work) and look again, so the
      // pass — and a test's tick() — ends only when nothing is in flight and nothing is due.
      await waitForChange();
      return true;
    },
  };

  const stop = () => {
    if (stopping) return;
    stopping = true;
    abandon.abort();
    nudge();
  };

  return {
    spec,
    nudge,
    stop,
    async close() {
      stop();
      await Promise.allSettled([...inflight.values()].map((f) => f.done));
      await agent?.close();
    },
  };
}
