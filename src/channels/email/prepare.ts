// Turns a Delivery into what goes on the wire, the same way for direct and relay delivery: each
// recipient's recorded state, then the bytes. The bytes are composed here — the From (the
// connection's default; `from` only when its domain is a verified sending domain of the workspace,
// else replaced by the default with a timeline note saying so),
// tracking (when on for the workspace), List-Unsubscribe on template sends, the MIME message, its
// DKIM signature and the VERP envelope sender — unless a raw source hands them over ready-made
// (forwarding: the received message as it arrived, from an SRS envelope sender).
import type { Delivery, OutboundMessage } from '../../channel.js';
import type { Config } from '../../config.js';
import type { Db, RecipientKind } from '../../db/index.js';
import { bounceDomainOf, domainOf } from '../../domains/index.js';
import type { BounceRules } from './bounce-rules.js';
import type { Clock } from '../../lib/clock.js';
import type { SuppressionStore } from '../../suppressions/index.js';
import { composeSigned, messageIdFor, verpAddress, type ComposeRequest } from './compose.js';
import { loadRecipients, type RecipientState } from './recipients.js';
import { addTracking } from './tracking/rewrite.js';
import type { SigningKeys } from './signing-keys.js';
import type { TokenSigner } from './tracking/tokens.js';
import type { EmailOutput } from '../../contract/channels.js';

/** The bytes of a message and its envelope sender. */
export interface WireMessage {
  raw: Buffer;
  /** Its Message-ID (the providerMessageId of a delivery); null when the bytes are someone else's. */
  messageId: string | null;
  envelopeFrom: string;
  /** The domain of the From header when Postern composed it (the sending domain a pool and a warm-up are chosen by). */
  fromDomain?: string;
}

/**
 * Ready-made bytes for a delivery, or null to compose them as usual; `{ gone }` when the delivery
 * asks for bytes that no longer exist (a permanent failure).
 */
export type RawSource = (delivery: Delivery) => Promise<WireMessage | { gone: string } | null>;

export interface EmailDeps {
  config: Config;
  db: Db;
  clock: Clock;
  suppressions: SuppressionStore;
  /** Signing keys, read through a short cache. */
  signingKeys: SigningKeys;
  /** Whether open and click tracking is on for a workspace (tracking/settings.ts). */
  tracking(workspaceId: string): Promise<boolean>;
  /** Where recipients reach the tracking and unsubscribe routes. */
  publicUrl(): string;
  tokens(): Promise<TokenSigner>;
  /** Where the MIME message is built and signed (the delivery threads); else the event loop. */
  composer?: { compose(req: ComposeRequest): Promise<Buffer> };
  /** Bytes handed over ready-made (forwarding). */
  source?: RawSource;
  /** How failures are judged (bounce-rules.ts); absent: on their codes alone. */
  rules?: BounceRules | null;
}

export interface Prepared extends WireMessage {
  recipients: RecipientState[];
  /** Timeline notes produced while preparing (suppressed cc/bcc, a replaced from). */
  notes: string[];
  /** Whether cc/bcc recipients were suppressed here (their rows must be saved). */
  suppressedSome: boolean;
}

function defaultFrom(config: Config): { address: string; name: string } {
  return { address: config.delivery.from.address || `postern@${config.hostname}`, name: config.delivery.from.name };
}

/** The recipients of a delivery with their recorded state; cc/bcc on the suppression list are dropped here. */
async function recipientsOf(deps: EmailDeps, delivery: Delivery): Promise<{ recipients: RecipientState[]; notes: string[] }> {
  const m = delivery.message;
  const list: { address: string; kind: RecipientKind }[] = [];
  const seen = new Set<string>();
  for (const [kind, addrs] of [
    ['to', [m.recipient]],
    ['cc', m.cc],
    ['bcc', m.bcc],
  ] as const) {
    for (const a of addrs) {
      const address = a.trim().toLowerCase();
      if (seen.has(address)) continue;
      seen.add(address);
      list.push({ address, kind });
    }
  }
  const recipients = await loadRecipients(deps.db, m.id, list, m.attempt);

  // `to` was checked by the dispatcher's hold step.
  const notes: string[] = [];
  const secondary = recipients.filter((r) => r.kind !== 'to' && r.status === 'pending');
  if (secondary.length) {
    const suppressed = await deps.suppressions.getMany(
      m,
      secondary.map((r) => r.address),
    );
    for (const r of secondary) {
      const s = suppressed.get(r.address);
      if (s && s.reason !== 'unsubscribe') {
        r.status = 'suppressed';
        r.response = `on the suppression list (${s.reason})`;
        notes.push(`${r.kind} ${r.address}: suppressed (${s.reason})`);
      }
    }
  }
  return { recipients, notes };
}

/** What composing a message needs: the sender's settings, its signing key, tracking and where the message is built. */
export type ComposeDeps = Pick<EmailDeps, 'config' | 'signingKeys' | 'tracking' | 'publicUrl' | 'tokens' | 'composer'>;

/**
 * Composes and signs a message as it goes on the wire at `date`; notes what the caller should know
 * (a replaced from). Delivery and the dashboard's source view both compose through here, so what
 * the dashboard shows is what is sent.
 */
export async function composeEmail(
  deps: ComposeDeps,
  m: OutboundMessage,
  content: EmailOutput,
  date: Date,
): Promise<WireMessage & { notes: string[] }> {
  const { config } = deps;
  const base = defaultFrom(config);

  // From: the override only on a verified sending domain of the workspace; its key signs the
  // message. Otherwise the default sender, and the timeline says so.
  let from = { address: base.address, name: m.fromNameOverride ?? base.name };
  let key = await deps.signingKeys(m.workspaceId, domainOf(base.address), config.dkim.selector);
  const notes: string[] = [];
  if (m.fromOverride) {
    const overrideKey = await deps.signingKeys(m.workspaceId, domainOf(m.fromOverride), config.dkim.selector);
    if (overrideKey) {
      from = { ...from, address: m.fromOverride };
      key = overrideKey;
    } else {
      notes.push(`from replaced: ${m.fromOverride} is not a verified sending domain of this workspace; sent as ${base.address}`);
    }
  }

  const publicUrl = deps.publicUrl().replace(/\/$/, '');
  let unsubscribeUrl: string | null = null;
  let html = content.html;
  const tracking = html ? await deps.tracking(m.workspaceId) : false;
  if (m.templateSlug !== null || tracking) {
    const tokens = await deps.tokens();
    if (m.templateSlug !== null) {
      unsubscribeUrl = `${publicUrl}/u/${tokens.sign({ k: 'unsubscribe', m: m.publicId, w: m.workspaceId, r: m.recipient.toLowerCase() })}`;
    }
    if (tracking) {
      html = addTracking(html, {
        open: `${publicUrl}/t/o/${tokens.sign({ k: 'open', m: m.publicId })}`,
        click: (u) => `${publicUrl}/t/c/${tokens.sign({ k: 'click', m: m.publicId, u })}`,
        skip: unsubscribeUrl ? [unsubscribeUrl] : [],
      });
    }
  }

  const messageId = messageIdFor(m.publicId, config.hostname);
  const input = {
    from,
    to: m.recipient,
    cc: m.cc,
    replyTo: m.replyTo,
    subject: content.subject,
    html,
    text: content.text,
    attachments: m.attachments,
    messageId,
    date,
    unsubscribeUrl,
  };
  const raw = await (deps.composer ?? { compose: composeSigned }).compose({ input, key });
  // The envelope sender: the From domain's own return path when confirmed (SPF then aligns with
  // From for DMARC), else the shared bounce domain.
  return {
    raw,
    messageId,
    envelopeFrom: verpAddress(m.publicId, key?.returnPath ?? bounceDomainOf(config)),
    fromDomain: domainOf(from.address),
    notes,
  };
}

/** What an attempt sends: the bytes (ready-made or composed) and the recipients still to try. */
export async function prepareEmail(deps: EmailDeps, delivery: Delivery): Promise<Prepared | { gone: string }> {
  const ready = deps.source ? await deps.source(delivery) : null;
  if (ready && 'gone' in ready) return ready;
  const { recipients, notes } = await recipientsOf(deps, delivery);
  const { notes: composeNotes, ...wire } = ready
    ? { ...ready, notes: [] }
    : await composeEmail(deps, delivery.message, delivery.content as EmailOutput, deps.clock.now());
  return { ...wire, recipients, notes: [...composeNotes, ...notes], suppressedSome: notes.length > 0 };
}
