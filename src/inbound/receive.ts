// Receiving one SMTP transaction, as named steps: analyze (verify SPF/DKIM/DMARC/ARC and parse, on
// an analysis thread when there is one) → route the recipients into one message per (workspace,
// address) → store raw + parsed + outbox event in one transaction → announce after commit. The
// listener replies 250 only when this resolves, so a 250 always means the message is durable. The
// bounce domain is not handled here (channels/email/bounces.ts).
import { createHash } from 'node:crypto';
import { type BatchCommitter, flag } from '../db/index.js';
import type { Deps } from '../deps.js';
import { createStamps } from '../lib/clock.js';
import { asBuffer } from '../lib/threads.js';
import { planLimits } from '../workspaces/index.js';
import type { Analyzer } from './analysis-pool.js';
import type { ScanResult, Scanner } from './scan.js';
import type { Route } from './routing.js';
import type { Verdicts } from './verify.js';
import type { StoredMessage, StoreRequest, StoreResult } from './store.js';

export type MailboxRoute = Extract<Route, { kind: 'mailbox' }>;

export interface IncomingMail {
  raw: Buffer;
  mailFrom: string;
  routes: MailboxRoute[];
  ip: string;
  helo: string;
  /** Trace header lines (CRLF-terminated) to store above the message: the SMTP listener's Received. */
  trace?: string;
  /** Bytes before `raw` in its memory, free to write: where the lines stored above it go (analyze.ts). */
  headroom?: number;
}

export type { StoredMessage } from './store.js';

/**
 * What the SMTP listener leaves free before a message it received: room for the Authentication-
 * Results and Received lines, typically 400–900 bytes. Lines that do not fit are stored all the
 * same, through a copy of the message.
 */
export const SOURCE_HEADROOM = 2048;

export interface Receiver {
  receive(mail: IncomingMail): Promise<StoredMessage[]>;
  /** A client connected: get ready to receive (starts the analysis threads). */
  warm(): void;
}

export interface ReceiverDeps extends Pick<Deps, 'config' | 'clock' | 'ids' | 'log' | 'bus'> {
  /** Stores a request with others that arrived together (storeMessages through the group commit). */
  committer: BatchCommitter<StoreRequest, StoreResult>;
  analyzer: Analyzer;
  /** Spam and virus checks (rspamd, clamd) when configured. */
  scanner?: Scanner;
  /** Told the verification results of each analysed message (metrics). */
  observe?: (verdicts: Verdicts) => void;
}

/** A message the scanners say must be refused; the listener answers 550 (spam) or 554 (virus). */
export class MessageRefused extends Error {
  constructor(readonly refusal: NonNullable<ScanResult['refuse']>) {
    super(refusal.reason === 'spam' ? `spam score ${refusal.score}` : `virus ${refusal.signature}`);
    this.name = 'MessageRefused';
  }
}

export function createReceiver(deps: ReceiverDeps): Receiver {
  const { config, clock, ids, log, bus, committer, analyzer, scanner } = deps;
  // receivedAt strictly increases (nine fractional digits), so paging by `before` never splits a millisecond.
  const stamp = createStamps(clock);

  return {
    warm: () => analyzer.warm(),
    async receive(mail) {
      const size = mail.raw.length;
      // The listener is done with the bytes once they are here; the scanners read them beside the
      // analysis, so only without scanners may an analysis thread take them rather than a copy.
      const analysis = analyzer.analyze(
        {
          raw: mail.raw,
          ip: mail.ip,
          helo: mail.helo,
          mailFrom: mail.mailFrom,
          mta: config.hostname,
          maxBodyBytes: config.inbound.maxBodyBytes,
          maxParts: config.inbound.maxParts,
          trace: mail.trace ?? '',
          headroom: mail.headroom ?? 0,
        },
        { giveRaw: !scanner?.enabled },
      );
      // The scanners run beside verification and parsing; their verdicts join the others.
      const [a, scanned] = await Promise.all([
        analysis,
        scanner?.enabled
          ? scanner.scan({
              raw: mail.raw,
              ip: mail.ip,
              helo: mail.helo,
              mailFrom: mail.mailFrom,
              recipients: mail.routes.map((r) => r.rcpt),
            })
          : null,
      ]);
      if (scanned?.refuse) {
        log.info(
          { from: mail.mailFrom, ip: mail.ip, spam: scanned.spam.score, virus: scanned.virus.signature },
          'inbound message refused by the scanners',
        );
        throw new MessageRefused(scanned.refuse);
      }
      deps.observe?.(scanned ? { ...a.verdicts, spam: scanned.spam, virus: scanned.virus } : a.verdicts);
      if (scanned) {
        const parsed = JSON.parse(a.parsedJson) as { verdicts: Record<string, unknown> };
        parsed.verdicts.spam = scanned.spam;
        parsed.verdicts.virus = scanned.virus;
        a.parsedJson = JSON.stringify(parsed);
      }
      // Authentication-Results above our Received, as a receiving MTA's milters put them.
      const stored = asBuffer(a.source);

      // One message per (workspace, matched address); unmatched recipients of a workspace share one.
      const groups = new Map<string, MailboxRoute[]>();
      for (const r of mail.routes) {
        const key = `${r.workspaceId}:${r.address?.id ?? '-'}`;
        groups.set(key, [...(groups.get(key) ?? []), r]);
      }

      const receivedAt = stamp();
      const window = config.inbound.retryWindow;
      const req: StoreRequest = {
        rawId: ids.uuid(),
        source: stored,
        receivedAt,
        groups: [],
        seenSince: new Date(Date.parse(receivedAt) - window).toISOString(),
      };
      // A client that sends a message again (its 250 was lost, it tried another MX of the cluster)
      // sends the same bytes from the same envelope sender to the same address.
      const seenKey = (group: string) =>
        window > 0 && a.retryKey !== null
          ? createHash('sha256').update(`${group}\0${mail.mailFrom}\0${a.retryKey}`).digest('base64url')
          : null;
      for (const [group, routes] of groups) {
        const first = routes[0];
        const address = first.address;
        req.groups.push({
          row: {
            id: ids.uuid(),
            public_id: ids.publicId('rcv'),
            workspace_id: first.workspaceId,
            livemode: address ? address.livemode : flag(true),
            status: address ? 'received' : 'dropped',
            address_id: address?.id ?? null,
            address: address && first.exact ? address.address : null,
            plus_tag: first.plusTag,
            raw_id: req.rawId,
            envelope: JSON.stringify({ from: mail.mailFrom, to: routes.map((r) => r.rcpt) }),
            from_email: a.fromEmail,
            parsed: a.parsedJson,
            subject: a.subject,
            size_bytes: stored.length,
            // Each row its own stamp: one message to two addresses of a workspace lists as two rows.
            received_at: req.groups.length === 0 ? receivedAt : stamp(),
          },
          quota: planLimits(config, first.plan)?.inboundPerMonth ?? 0,
          eventId: ids.publicId('evt'),
          endpointId: address?.webhook_endpoint_id ?? null,
          forwards: !!address?.forward_to,
          seenKey: seenKey(group),
        });
      }

      const result = await committer.store(req);
      if (result.events.length > 0) bus.publish('events.recorded', { type: 'message.received' });
      const retried = result.out.filter((m) => m.retry);
      if (retried.length > 0)
        log.info(
          { messages: retried.map((m) => m.id), from: mail.mailFrom, ip: mail.ip },
          'a message sent again within inbound.retryWindow: answered with the id stored the first time, not stored again',
        );
      log.debug({ messages: result.out.map((m) => `${m.id}:${m.status}`), size }, 'inbound stored');
      if (a.partial)
        log.info({ messages: result.out.map((m) => m.id), reason: a.partial, size }, 'inbound message parsed in part (stored truncated)');
      return result.out;
    },
  };
}
