// The dispatcher, as a readable list of named steps (after Postal's OutgoingMessageProcessor):
//   claim (lease) → due (scheduled → queued) → render → scan → hold (suppressed / opted out)
//   → dispatch (transport chosen, attempt counted, committed BEFORE hand-over) → deliver → outcome
// Each step appends a {t, e} entry to the timeline. Writes happen at three points: the claim, the
// commit before hand-over (rendered and dispatched together, or a terminal blocked / suppressed /
// opted_out / failed), and the outcome. A crash between hand-over and outcome re-delivers after the
// lease (at least once). `deferred` keeps the status dispatched and sets the next `due_at` per the
// retry policy; past `retry.maxAgeHours` the message fails.
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
import { performance } from 'node:perf_hooks';
import type { Deps } from '../app.js';
import { recordEvent, type EventType } from '../events/record.js';
import type { ChannelOutput } from '../templates/render.js';
import type { DeliveryOutcome, OutboundMessage } from './channels/channel.js';
import { simulationFor } from './channels/test-recipients.js';
import { BLOCKED_NOTICE, rowToMessage, rowToOutbound, type Message, type MessageRow, type TimelineEntry } from './message.js';
import { queriesFor } from './compiled-queries.js';
import { claimDue, releaseLeases, updateIfHeld, type RowPatch } from './queue.js';
import type { Renderer } from './render-threads.js';
import { nextAttempt } from './retry.js';
import { createScanner } from './scanner.js';
import type { TransportRegistry } from './transports.js';
import type { WriteBatcher } from './write-batcher.js';

/** A hold: the suppression list or an unsubscribe (wired by the email area). null lets it through. */
export type HoldCheck = (message: OutboundMessage) => Promise<{ kind: 'suppressed' | 'opted_out'; reason: string } | null>;

/** Told of a permanent failure whose transport asked for the recipient to be suppressed. */
export type SuppressHook = (message: OutboundMessage, detail: string) => Promise<void>;

const EVENT_OF: Record<string, EventType | undefined> = {
  sent: 'message.sent',
  delivered: 'message.delivered',
  failed: 'message.failed',
  suppressed: 'message.suppressed',
  blocked: 'message.blocked',
  opted_out: 'message.opted_out',
};

export interface DispatcherDeps extends Pick<Deps, 'config' | 'db' | 'dialect' | 'clock' | 'ids' | 'log' | 'bus'> {
  transports: TransportRegistry;
  holds: HoldCheck[];
  suppressHooks: SuppressHook[];
  writes: WriteBatcher;
  /** Where rendering runs (render threads, or the event loop). */
  renderer: Pick<Renderer, 'render'>;
}

interface Claimed {
  row: MessageRow;
  /** Its rendered output, under way since the claim. */
  output: Promise<ChannelOutput>;
}

export interface Dispatcher {
  /** One worker pass: claims free slots' worth of due messages; see the header for its waiting rule. */
  run(): Promise<boolean>;
  /** Waits for deliveries in flight, then releases this node's leases. */
  drain(): Promise<void>;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, clock, log, bus } = deps;
  const cfg = deps.config.dispatcher;
  const scan = createScanner(deps.config.scanner);
  const token = deps.ids.uuid(); // this node's lease owner id
  const queries = queriesFor(db);
  const inFlight = new Set<Promise<void>>();
  // Claimed, leased, waiting for a slot (oldest first), each already being rendered: rendering
  // is pure and off the event loop, so it may as well happen while the message waits.
  const ready: Claimed[] = [];
  let draining = false;
  // Resolved (and replaced) whenever a slot frees: cheaper than Promise.race over every slot.
  let freed!: () => void;
  let slotFreed = new Promise<void>((r) => (freed = r));
  const chunk = Math.min(cfg.batchSize, Math.max(1, Math.floor(cfg.concurrency / 4)));
  // Messages held at most: every slot busy and two chunks waiting.
  const held = () => inFlight.size + ready.length;
  const maxHeld = cfg.concurrency + 2 * chunk;

  const stamp = () => clock.now().toISOString();

  // Commits a step: CAS on (status, lease), the patch, the event when the new status has one.
  async function commit(row: MessageRow, expectStatus: string, patch: RowPatch): Promise<MessageRow | null> {
    const next: MessageRow = { ...row, ...patch } as MessageRow;
    const changed = patch.status !== undefined && patch.status !== expectStatus;
    const type = changed ? EVENT_OF[patch.status!] : undefined;
    // The Message view of a status change serves both the event and the live tail (when one listens).
    const view: Message | null = type || (changed && bus.listening('message.changed')) ? rowToMessage(next) : null;
    const ok = await deps.writes.run(async (trx) => {
      const held = await updateIfHeld(trx, row.id, { status: expectStatus, token }, patch, queries);
      if (held && type)
        await recordEvent(trx, deps, { workspaceId: row.workspace_id, livemode: Number(row.livemode) === 1, type, data: view });
      return held;
    });
    if (!ok) {
      log.debug({ message: row.public_id, expectStatus }, 'dispatcher lost the message (canceled or lease retaken)');
      return null;
    }
    if (type) bus.publish('events.recorded', { type, workspaceId: row.workspace_id });
    if (view) bus.publish('message.changed', view);
    return next;
  }

  function render(row: MessageRow): Promise<ChannelOutput> {
    // Template sends always render; raw sends only when `interpolate` was asked for.
    const templated = row.template_slug !== null || Number(row.interpolate) === 1;
    return deps.renderer.render({ channel: row.channel as Message['channel'], content: row.content, vars: templated ? row.vars : null });
  }

  const terminal = (status: string, timeline: TimelineEntry[], error: string | null): RowPatch => ({
    status,
    timeline: JSON.stringify(timeline),
    error,
    due_at: null,
    locked_until: null,
    locked_by: null,
    updated_at: stamp(),
  });

  async function process({ row: claimed, output: rendering }: Claimed): Promise<void> {
    let row = claimed;
    const timeline: TimelineEntry[] = JSON.parse(row.timeline);
    const livemode = Number(row.livemode) === 1;
    const channel = row.channel as Message['channel'];
    const onDisk = row.status;

    // Step: due. A scheduled message whose time came is queued (in memory; committed with dispatch).
    if (row.status === 'scheduled') timeline.push({ t: stamp(), e: 'queued' });

    // Step: render (started on a render thread when the message was claimed).
    let output: ChannelOutput;
    try {
      output = await rendering;
    } catch (err) {
      log.error({ err, message: row.public_id }, 'render failed');
      timeline.push({ t: stamp(), e: 'failed' });
      await commit(row, onDisk, terminal('failed', timeline, 'the message content could not be rendered'));
      return;
    }
    const firstAttempt = onDisk !== 'dispatched';
    const outbound = rowToOutbound(row);

    if (firstAttempt) {
      timeline.push({ t: stamp(), e: 'rendered' });
      const simulated = livemode ? null : simulationFor(channel, row.recipient);

      // Step: scan. The real reason is for the operator only.
      const verdict = simulated === 'blocked' ? { blocked: true as const, reason: 'test recipient simulates a block' } : scan(output);
      if (verdict.blocked) {
        log.warn(
          { message: row.public_id, workspaceId: row.workspace_id, reason: verdict.reason },
          'outbound content scanner blocked a message',
        );
        timeline.push({ t: stamp(), e: BLOCKED_NOTICE });
        await commit(row, onDisk, terminal('blocked', timeline, null));
        return;
      }

      // Step: hold if suppressed or opted out.
      let hold: { kind: 'suppressed' | 'opted_out'; reason: string } | null = null;
      if (simulated === 'opted_out') hold = { kind: 'opted_out', reason: 'test recipient simulates an unsubscribe' };
      for (const check of deps.holds) {
        if (hold) break;
        hold = await check(outbound);
      }
      if (hold) {
        timeline.push({ t: stamp(), e: hold.kind });
        await commit(row, onDisk, terminal(hold.kind, timeline, hold.reason));
        return;
      }
    }

    // Step: pick the transport. A live channel without one fails clearly instead of waiting forever.
    const transport = deps.transports.forMessage(channel, livemode);
    if (!transport) {
      timeline.push({ t: stamp(), e: 'failed' });
      await commit(row, onDisk, terminal('failed', timeline, `no transport is configured for the ${channel} channel`));
      return;
    }

    // Step: dispatch. Committed before the hand-over, so a crash after it is visible and retried.
    const attempts = Number(row.attempts) + 1;
    if (firstAttempt) timeline.push({ t: stamp(), e: 'dispatched' });
    const leaseUntil = new Date(clock.now().getTime() + cfg.leaseSeconds * 1000).toISOString();
    const dispatched = await commit(row, onDisk, {
      status: 'dispatched',
      timeline: JSON.stringify(timeline),
      attempts,
      locked_until: leaseUntil,
      updated_at: stamp(),
    });
    if (!dispatched) return;
    row = dispatched;

    // Step: deliver.
    const started = performance.now();
    let outcome: DeliveryOutcome;
    try {
      outcome = await transport.deliver({ message: { ...outbound, attempt: attempts }, content: output });
    } catch (err) {
      log.warn({ err, message: row.public_id, transport: transport.name }, 'transport threw; treating as a temporary failure');
      outcome = { kind: 'deferred', provider: transport.name, error: `transport error: ${(err as Error).message}` };
    }
    const latencyMs = Math.round(performance.now() - started);

    // Step: outcome.
    const now = clock.now();
    for (const note of outcome.notes ?? []) timeline.push({ t: now.toISOString(), e: note });
    const provider = { provider: outcome.provider, provider_connection_id: outcome.providerConnectionId ?? null, latency_ms: latencyMs };
    if (outcome.kind === 'deferred') {
      const since = new Date(row.scheduled_at ?? row.created_at);
      const next = nextAttempt(deps.config.retry, attempts, now, since, outcome.retryAt);
      timeline.push({ t: now.toISOString(), e: 'deferred' });
      if (next) {
        await commit(row, 'dispatched', {
          ...provider,
          timeline: JSON.stringify(timeline),
          error: outcome.error,
          due_at: next.toISOString(),
          locked_until: null,
          locked_by: null,
          updated_at: now.toISOString(),
        });
      } else {
        timeline.push({ t: now.toISOString(), e: 'failed' });
        await commit(row, 'dispatched', { ...provider, ...terminal('failed', timeline, `retries expired: ${outcome.error}`) });
      }
      return;
    }
    timeline.push({ t: now.toISOString(), e: outcome.kind });
    const error = outcome.kind === 'failed' || outcome.kind === 'suppressed' ? outcome.error : null;
    const providerMessageId = outcome.kind === 'delivered' || outcome.kind === 'sent' ? (outcome.providerMessageId ?? null) : null;
    await commit(row, 'dispatched', { ...provider, provider_message_id: providerMessageId, ...terminal(outcome.kind, timeline, error) });
    // An unregistered token, a gone subscription, a hard bounce: later sends to it are held.
    if (outcome.kind === 'failed' && outcome.suppress) {
      for (const hook of deps.suppressHooks) {
        await hook(outbound, outcome.error).catch((err) => log.error({ err, message: row.public_id }, 'suppressing the recipient failed'));
      }
    }
  }

  function launch(claimed: Claimed): void {
    const p: Promise<void> = process(claimed)
      .catch((err) => log.error({ err, message: claimed.row.public_id }, 'dispatch failed; the lease will expire and it is retried'))
      .finally(() => {
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
    async run() {
      if (held() > 0 && maxHeld - held() < chunk) {
        // Each wait ends with a slot freed (and a waiting message started in it), so this loop
        // ends after at most a chunk of turns.
        while (held() > 0 && maxHeld - held() < chunk) await slotFreed;
        return true;
      }
      const now = clock.now();
      const rows = await deps.writes.run((trx) =>
        claimDue(trx, deps.dialect, {
          now: now.toISOString(),
          leaseUntil: new Date(now.getTime() + cfg.leaseSeconds * 1000).toISOString(),
          token,
          limit: Math.min(maxHeld - held(), cfg.batchSize),
        }),
      );
      for (const row of rows) {
        const output = render(row);
        output.catch(() => {}); // handled when the message is processed
        ready.push({ row, output });
      }
      fill();
      if (rows.length === 0) {
        // Nothing new is due: let what is in flight (and waiting) finish, so a pass (tick) ends
        // with the work done.
        while (inFlight.size > 0) await Promise.all(inFlight);
        return false;
      }
      await slotFreed;
      return true;
    },
    async drain() {
      draining = true;
      await Promise.all(inFlight);
      // Releases the waiting messages' leases too: they were never handed over.
      await releaseLeases(db, token);
    },
  };
}
