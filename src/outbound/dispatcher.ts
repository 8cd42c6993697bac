// The dispatcher, as a readable list of named steps (after Postal's OutgoingMessageProcessor):
//   claim (lease) → due (scheduled → queued) → render → scan → hold (suppressed / opted out)
//   → dispatch (transport chosen, attempt counted, committed BEFORE hand-over) → deliver → outcome
// Each step appends a {t, e} entry to the timeline. Writes happen at three points: the claim, the
// commit before hand-over (rendered and dispatched together, or a terminal blocked / suppressed /
// opted_out / failed), and the outcome. A crash between hand-over and outcome re-delivers after the
// lease (at least once). `deferred` keeps the status dispatched and sets the next `due_at` per the
// retry policy; past `retry.maxAge` the message fails.
//
// Concurrency: up to `dispatcher.concurrency` messages are in flight at once, so a slow transport
// ties up its slots and nothing else (the API never waits on it). Claims come in chunks of a
// quarter of the slots (one claim query per message finished cost more than the delivery
// bookkeeping), and ahead of need: up to two chunks of claimed messages wait, leased, for a slot,
// and a finishing message hands its slot straight to the next. A claim is a commit (a commit
// window and an fsync); claimed only once slots were free, every slot sat idle that long each
// round, which made a busy dispatcher latency-bound well below what the event loop could do.
// Claimed-but-waiting messages were never handed over, so a crash can duplicate no more than the
// `dispatcher.concurrency` in flight, as before; their leases run out and they are retaken.
//
// Timing: a pass that finds nothing due notes when the next message falls due (a scheduled send, a
// retry) and the worker wakes for it then, not at its next interval; on a cluster every node wakes
// and the first claims it. A background pass does not wait for deliveries in flight (a tick does),
// so a slow receiver never delays the claim of what falls due meanwhile.
import { performance } from 'node:perf_hooks';
import type { ChannelTransport, DeliveryOutcome, OutboundMessage } from '../channel.js';
import { type RenderRequest, simulationFor } from '../channels/index.js';
import { isDatabaseUnavailable, isSet } from '../db/index.js';
import type { Deps } from '../deps.js';
import {
  BLOCKED_NOTICE,
  type Change,
  type ContentRow,
  type Ledger,
  type MessageContent,
  type MessageRow,
  rowToOutbound,
  type Trigger,
  withContents,
} from '../messages/index.js';
import { claimDue, nextDueAfter, releaseLease, releaseLeases, renewLeases } from './queue.js';
import { nextAttempt } from './retry.js';
import { createScanner } from './scanner.js';
import type { TransportRegistry } from './transports.js';
import type { ChannelOutput } from '../contract/channels.js';
import type { MessageStatus } from '../contract/messages.js';

/** A hold: the suppression list or an unsubscribe (wired by the composition root). null lets it through. */
export type HoldCheck = (message: OutboundMessage) => Promise<{ kind: 'suppressed' | 'opted_out'; reason: string } | null>;

/** Told of a permanent failure whose transport asked for the recipient to be suppressed. */
export type SuppressHook = (message: OutboundMessage, detail: string) => Promise<void>;

/**
 * Where messages are rendered: the delivery threads the composition root hands over
 * (channels/email/delivery-threads.ts, which also compose and send email there), or the event loop.
 */
export interface Renderer {
  /** The rendered output of a message's content; rejects when the content cannot be rendered. */
  render(req: RenderRequest): Promise<ChannelOutput>;
}

export interface DispatcherDeps extends Pick<Deps, 'config' | 'db' | 'dialect' | 'clock' | 'ids' | 'log' | 'writes'> {
  ledger: Ledger;
  transports: TransportRegistry;
  holds: HoldCheck[];
  suppressHooks: SuppressHook[];
  /** Where rendering runs (delivery threads, or the event loop). */
  threads: Renderer;
  /** This node's id in the cluster: the prefix of its leases (a fresh one when absent). */
  nodeId?: string;
  /**
   * Asks for a pass soon: called once a retry is committed, so the pass that follows notes when
   * it falls due (the pass that claimed the message ended before its outcome was known).
   */
  wake?: () => void;
}

/** What rendering a stored message asks for (also the dashboard's preview): template sends always render; raw sends only when `interpolate` was asked for. */
export function renderRequestOf(row: MessageRow & Pick<MessageContent, 'content'>): RenderRequest {
  const templated = row.template_slug !== null || isSet(row.interpolate);
  return { channel: row.channel, content: row.content, vars: templated ? row.vars : null };
}

interface Claimed {
  row: ContentRow;
  /** Its rendered output, under way since the claim. */
  output: Promise<ChannelOutput>;
}

export interface Dispatcher {
  /** One worker pass: claims free slots' worth of due messages; see the header for its waiting rule. */
  run(opts?: { settle: boolean }): Promise<boolean>;
  /** Milliseconds until the next queued message falls due, as of the last pass that found none due. */
  nextPassIn(): number | null;
  /** Stops claiming at once (a stop has begun); what is claimed still runs. */
  stopClaiming(): void;
  /** Messages in a slot now: launched and not settled (claimed ones waiting for a slot are not). */
  inFlight(): number;
  /**
   * Stops claiming, gives back the leases of messages claimed but never handed over, and waits up
   * to `timeoutMs` for deliveries in flight; true when they all finished.
   */
  drain(timeoutMs: number): Promise<boolean>;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { clock, log, ledger } = deps;
  const cfg = deps.config.dispatcher;
  const scan = createScanner(deps.config.scanner);
  const token = deps.nodeId ?? deps.ids.uuid(); // this node's lease owner id
  const inFlight = new Set<Promise<void>>();
  // Claimed, leased, waiting for a slot (oldest first), each already being rendered: rendering
  // is pure and off the event loop, so it may as well happen while the message waits.
  const ready: Claimed[] = [];
  let draining = false;
  // When the next message falls due (ms, application clock), as of the last pass that found none due.
  let nextDue: number | null = null;
  // Resolved (and replaced) whenever a slot frees: cheaper than Promise.race over every slot.
  let freed!: () => void;
  let slotFreed = new Promise<void>((r) => (freed = r));
  const chunk = Math.min(cfg.batchSize, Math.max(1, Math.floor(cfg.concurrency / 4)));
  // Messages held at most: every slot busy and two chunks waiting.
  const held = () => inFlight.size + ready.length;
  const maxHeld = cfg.concurrency + 2 * chunk;

  // Every write of the dispatcher holds the lease of the claim that took the message (this node's
  // token and a claim number, so a lease this same node lost and took again is a different one):
  // a cancel or a retaken lease makes it match nothing, and the message is let go.
  // Once a message was handed to its transport, its outcome must be written whatever happens to the
  // database meanwhile: dropped, the message would go out again when its lease runs out. So while
  // the database is away (a restart, a failover) that write is tried again until it answers.
  const commit = (run: Run, change: Change) => {
    const write = () => ledger.commit(change, { lease: run.row.locked_by! });
    return run.handedOver ? whenAnswering(`the outcome of ${run.row.public_id}`, write) : write();
  };
  let closed = false;
  /** Runs `write`, again and again with a growing pause while the database is unavailable. */
  async function whenAnswering<T>(what: string, write: () => Promise<T>): Promise<T> {
    for (let pause = 100, told = false; ; pause = Math.min(pause * 2, 2000)) {
      try {
        return await write();
      } catch (err) {
        if (closed || !isDatabaseUnavailable(err)) throw err;
        if (!told)
          log.warn(
            { err: { code: (err as { code?: string }).code, message: (err as Error).message } },
            `database unavailable: writing ${what} again when it answers`,
          );
        told = true;
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }
  let claims = 0;
  // Every message this node holds a lease on (claimed and not yet settled), by id, with its lease.
  const holding = new Map<string, string>();
  // Writes to many rows at once keep out of a batch (db/group-commit.ts): on PostgreSQL they may
  // wait for a row another batch holds, and a batch waiting on them could wait back.
  const alone = { alone: true };
  // The leases of held messages are renewed every third of the lease, so a delivery that takes
  // longer than the lease (a slow receiver, a long queue for a connection) keeps its message, and
  // the lease only bounds how long a crashed node's messages wait.
  const heartbeat = setInterval(() => void renew(), Math.max(1000, Math.floor(cfg.lease / 3)));
  heartbeat.unref();
  async function renew(): Promise<void> {
    if (holding.size === 0) return;
    const now = clock.now();
    const byLease = new Map<string, string[]>();
    for (const [id, lease] of holding) byLease.set(lease, [...(byLease.get(lease) ?? []), id]);
    try {
      await deps.writes.run(async (trx) => {
        for (const [lease, ids] of byLease) await renewLeases(trx, deps.dialect, lease, ids, now, new Date(now.getTime() + cfg.lease));
      }, alone);
    } catch (err) {
      log.warn({ err }, 'renewing the leases of messages in flight failed; retrying at the next beat');
    }
  }

  const finished = (error: string | null) => ({ error, due_at: null, locked_until: null, locked_by: null });

  function render(row: ContentRow): Promise<ChannelOutput> {
    return deps.threads.render(renderRequestOf(row));
  }

  // One message on its way through the steps; each step says whether the message goes on.
  interface Run {
    row: ContentRow;
    change: Change;
    outbound: OutboundMessage;
    livemode: boolean;
    firstAttempt: boolean;
    /** Handed to the transport: from here on its outcome is written whatever it takes. */
    handedOver?: boolean;
  }

  // A step that ends the message's attempt here: the change with the message's last columns.
  const stop = async (run: Run, to: MessageStatus, trigger: Trigger, error: string | null, entry?: string): Promise<false> => {
    run.change.step(to, trigger, entry);
    await commit(run, run.change.set(finished(error)));
    return false;
  };

  /** A scheduled message whose time came is queued (in memory; committed with the dispatch). */
  function due(run: Run): void {
    if (run.row.status === 'scheduled') run.change.step('queued', 'due');
  }

  /** Its output, rendered on a delivery thread since the claim; null once it failed for good. */
  async function rendered(run: Run, rendering: Promise<ChannelOutput>): Promise<ChannelOutput | null> {
    try {
      const output = await rendering;
      if (run.firstAttempt) run.change.step('rendered', 'render');
      return output;
    } catch (err) {
      log.error({ err, message: run.row.public_id }, 'render failed');
      return stop(run, 'failed', 'render-failed', 'the message content could not be rendered').then(() => null);
    }
  }

  /** The content scanner (or a test recipient) blocks it; the real reason is for the operator only. */
  async function scanned(run: Run, output: ChannelOutput): Promise<boolean> {
    const verdict = simulated(run) === 'blocked' ? { blocked: true as const, reason: 'test recipient simulates a block' } : scan(output);
    if (!verdict.blocked) return true;
    log.warn(
      { message: run.row.public_id, workspaceId: run.row.workspace_id, reason: verdict.reason },
      'outbound content scanner blocked a message',
    );
    return stop(run, 'blocked', 'scan', null, BLOCKED_NOTICE);
  }

  /** Held when the recipient is suppressed or opted out (the hold checks, or a test recipient). */
  async function unheld(run: Run): Promise<boolean> {
    let hold: { kind: 'suppressed' | 'opted_out'; reason: string } | null = null;
    if (simulated(run) === 'opted_out') hold = { kind: 'opted_out', reason: 'test recipient simulates an unsubscribe' };
    for (const check of deps.holds) {
      if (hold) break;
      hold = await check(run.outbound);
    }
    return hold ? stop(run, hold.kind, 'hold', hold.reason) : true;
  }

  const simulated = (run: Run) => (run.livemode ? null : simulationFor(run.row.channel, run.row.recipient));

  /** The transport of its channel; a live channel without one fails clearly instead of waiting forever. */
  async function transportOf(run: Run): Promise<ChannelTransport | null> {
    const transport = deps.transports.forMessage(run.row.channel, run.livemode);
    if (transport) return transport;
    return stop(run, 'failed', 'no-transport', `no transport is configured for the ${run.row.channel} channel`).then(() => null);
  }

  /** The attempt counted and a fresh lease, committed before the hand-over, so a crash after it is visible and retried. */
  async function dispatched(run: Run): Promise<number | null> {
    const attempts = Number(run.row.attempts) + 1;
    if (run.firstAttempt) run.change.step('dispatched', 'dispatch');
    else run.change.step('dispatched', 'retry', null);
    const leaseUntil = new Date(clock.now().getTime() + cfg.lease).toISOString();
    return (await commit(run, run.change.set({ attempts, locked_until: leaseUntil }))) ? attempts : null;
  }

  /** The transport's answer; one that throws is a temporary failure. */
  async function delivered(run: Run, transport: ChannelTransport, output: ChannelOutput, attempts: number): Promise<DeliveryOutcome> {
    const started = performance.now();
    let outcome: DeliveryOutcome;
    run.handedOver = true;
    try {
      outcome = await transport.deliver({ message: { ...run.outbound, attempt: attempts }, content: output });
    } catch (err) {
      log.warn({ err, message: run.row.public_id, transport: transport.name }, 'transport threw; treating as a temporary failure');
      outcome = { kind: 'deferred', provider: transport.name, error: `transport error: ${(err as Error).message}` };
    }
    run.change.set({
      provider: outcome.provider,
      provider_connection_id: outcome.providerConnectionId ?? null,
      latency_ms: Math.round(performance.now() - started),
    });
    return outcome;
  }

  /** The outcome recorded: final, or deferred with the next attempt (failed once retries expire). */
  async function settled(run: Run, outcome: DeliveryOutcome, attempts: number): Promise<void> {
    const now = clock.now();
    for (const note of outcome.notes ?? []) run.change.note(note, now.toISOString());
    if (outcome.kind === 'deferred') {
      const since = new Date(run.row.scheduled_at ?? run.row.created_at);
      const next = nextAttempt(deps.config.retry, attempts, now, since, outcome.retryAt);
      run.change.step('dispatched', 'defer', 'deferred');
      if (!next) {
        await stop(run, 'failed', 'retries-expired', `retries expired: ${outcome.error}`);
        return;
      }
      const retry = {
        error: outcome.error,
        due_at: next.toISOString(),
        locked_until: null,
        locked_by: null,
        updated_at: now.toISOString(),
      };
      await commit(run, run.change.set(retry));
      deps.wake?.();
      return;
    }
    const error = outcome.kind === 'failed' || outcome.kind === 'suppressed' ? outcome.error : null;
    run.change.set({
      provider_message_id: outcome.kind === 'delivered' || outcome.kind === 'sent' ? (outcome.providerMessageId ?? null) : null,
    });
    await stop(run, outcome.kind, 'outcome', error);
    // An unregistered token, a gone subscription, a hard bounce: later sends to it are held.
    if (outcome.kind === 'failed' && outcome.suppress) {
      for (const hook of deps.suppressHooks) {
        await hook(run.outbound, outcome.error).catch((err) =>
          log.error({ err, message: run.row.public_id }, 'suppressing the recipient failed'),
        );
      }
    }
  }

  async function process({ row, output: rendering }: Claimed): Promise<void> {
    const run: Run = {
      row,
      change: ledger.change(row),
      outbound: rowToOutbound(row),
      livemode: isSet(row.livemode),
      firstAttempt: row.status !== 'dispatched',
    };
    due(run);
    const output = await rendered(run, rendering);
    if (!output) return;
    if (run.firstAttempt && !((await scanned(run, output)) && (await unheld(run)))) return;
    const transport = await transportOf(run);
    if (!transport) return;
    const attempts = await dispatched(run);
    if (attempts === null) return;
    await settled(run, await delivered(run, transport, output, attempts), attempts);
  }

  function launch(claimed: Claimed): void {
    const p: Promise<void> = process(claimed)
      .catch((err) => {
        // Not yet handed over (the outcome's writes wait above): the database went away before the
        // hand-over, so the message is let go as soon as it answers, for any node to take at once,
        // instead of waiting out its lease.
        if (isDatabaseUnavailable(err) && !closed) {
          log.warn({ message: claimed.row.public_id }, 'dispatch met an unavailable database; retried when it answers');
          return whenAnswering(`the release of ${claimed.row.public_id}`, () =>
            deps.writes.run((trx) => releaseLease(trx, claimed.row.id, claimed.row.locked_by!)),
          ).catch(() => {});
        }
        log.error({ err, message: claimed.row.public_id }, 'dispatch failed; the lease will expire and it is retried');
      })
      .finally(() => {
        holding.delete(claimed.row.id);
        inFlight.delete(p);
        fill();
        const wake = freed;
        slotFreed = new Promise<void>((r) => (freed = r));
        wake();
      });
    inFlight.add(p);
  }

  // Starts waiting messages while slots are free.
  function fill(): void {
    while (!draining && ready.length > 0 && inFlight.size < cfg.concurrency) launch(ready.shift()!);
  }

  return {
    inFlight: () => inFlight.size,
    nextPassIn() {
      return nextDue === null ? null : nextDue - clock.now().getTime();
    },
    async run(opts = { settle: true }) {
      if (draining) return false;
      if (held() > 0 && maxHeld - held() < chunk) {
        // Each wait ends with a slot freed (and a waiting message started in it), so this loop
        // ends after at most a chunk of turns.
        while (!draining && held() > 0 && maxHeld - held() < chunk) await slotFreed;
        return !draining;
      }
      const now = clock.now();
      const limit = Math.min(maxHeld - held(), cfg.batchSize);
      const rows = await deps.writes.run(async (trx) =>
        withContents(
          trx,
          deps.dialect,
          await claimDue(trx, deps.dialect, {
            now: now.toISOString(),
            leaseUntil: new Date(now.getTime() + cfg.lease).toISOString(),
            token: `${token}.${++claims}`,
            limit,
          }),
        ),
      );
      for (const row of rows) {
        holding.set(row.id, row.locked_by!);
        const output = render(row);
        output.catch(() => {}); // handled when the message is processed
        ready.push({ row, output });
      }
      fill();
      if (rows.length < limit) {
        // Everything due was claimed: the pass ends, and the worker comes back when a send wakes
        // it or the next message falls due. Waiting here for a slot instead would keep one slow
        // delivery from letting anything sent meanwhile be claimed (the pass would still be
        // running when the send woke the worker). A tick lets what is in flight (and waiting)
        // finish, so it ends with the work done.
        const next = await nextDueAfter(deps.db, now.toISOString());
        nextDue = next === null ? null : Date.parse(next);
        if (opts.settle) while (inFlight.size > 0) await Promise.all(inFlight);
        return false;
      }
      nextDue = null;
      // A stop that began meanwhile launches nothing more: waiting for a slot could wait forever.
      if (draining) return false;
      // A full claim: more may be due. Claim again at once while a chunk fits; else wait for a slot.
      if (maxHeld - held() < chunk) await slotFreed;
      return !draining;
    },
    stopClaiming() {
      draining = true;
      // A pass waiting for a slot wakes and ends: nothing more is launched.
      const wake = freed;
      slotFreed = new Promise<void>((r) => (freed = r));
      wake();
    },
    async drain(timeoutMs) {
      this.stopClaiming();
      // Writes waiting for the database give up when the drain time is over (below).
      setTimeout(() => (closed = true), timeoutMs).unref();
      // The drain is far shorter than a lease: what is in flight keeps its lease without beats.
      clearInterval(heartbeat);
      // The waiting messages were never handed over: another node may take them right away.
      const waiting = ready.splice(0).map((c) => c.row.id);
      for (const id of waiting) holding.delete(id);
      await deps.writes.run((trx) => releaseLeases(trx, token, waiting), alone);
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        Promise.all(inFlight).then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
      ]);
      clearTimeout(timer);
      if (!finished) {
        // Their SMTP transactions may be past the final dot: the leases stay, and the messages are
        // retried when they run out (at least once, as after a crash).
        log.warn(
          { inFlight: inFlight.size, drainMs: timeoutMs },
          'stop: deliveries still in flight after the drain time; their leases will expire',
        );
        return false;
      }
      await deps.writes.run((trx) => releaseLeases(trx, token), alone);
      return true;
    },
  };
}
