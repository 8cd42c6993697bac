// Turns a Delivery into what goes on the wire, the same way for direct and relay delivery:
// the From (the connection's default; `from` only when its domain is a verified domain of the
// workspace), tracking (when on for the workspace), List-Unsubscribe on template sends, the MIME
// message, its DKIM signature, the VERP envelope sender, and each recipient's recorded state.
import type { Config } from '../../../config.js';
import type { Db } from '../../../db/database.js';
import type { Clock } from '../../../lib/clock.js';
import type { EmailOutput } from '../../../templates/render.js';
import type { SuppressionStore } from '../../../suppressions/store.js';
import { addTracking } from '../../../tracking/rewrite.js';
import { isTrackingEnabled } from '../../../tracking/settings.js';
import type { TokenSigner } from '../../../tracking/tokens.js';
import { inlineRenderer, type Renderer } from '../../render-threads.js';
import type { Delivery } from '../channel.js';
import { messageIdFor, verpAddress } from './compose.js';
import { findSigningKey } from './dkim.js';
import { domainOf, loadRecipients, type RecipientKind, type RecipientState } from './recipients.js';

export interface EmailDeps {
  config: Config;
  db: Db;
  clock: Clock;
  suppressions: SuppressionStore;
  /** Where recipients reach the tracking and unsubscribe routes. */
  publicUrl(): string;
  tokens(): Promise<TokenSigner>;
  /** Where the MIME message is built and signed (the dispatcher's render threads); else the event loop. */
  renderer?: Pick<Renderer, 'compose'>;
}

export interface Prepared {
  raw: Buffer;
  messageId: string;
  envelopeFrom: string;
  recipients: RecipientState[];
  /** Timeline notes produced while preparing (suppressed cc/bcc). */
  notes: string[];
}

export function bounceDomainOf(config: Config): string {
  return config.bounceDomain || `bounces.${config.hostname}`;
}

export function defaultFrom(config: Config): { address: string; name: string } {
  return { address: config.delivery.from.address || `postern@${config.hostname}`, name: config.delivery.from.name };
}

export async function prepareEmail(deps: EmailDeps, delivery: Delivery): Promise<Prepared> {
  const { config, db } = deps;
  const m = delivery.message;
  const content = delivery.content as EmailOutput;
  const base = defaultFrom(config);

  // From: the override only on a verified domain of the workspace; its key signs the message.
  let from = { address: base.address, name: m.fromNameOverride ?? base.name };
  let key = await findSigningKey(db, m.workspaceId, domainOf(base.address), config.dkim.selector);
  if (m.fromOverride) {
    const overrideKey = await findSigningKey(db, m.workspaceId, domainOf(m.fromOverride), config.dkim.selector);
    if (overrideKey) {
      from = { ...from, address: m.fromOverride };
      key = overrideKey;
    }
  }

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
  const recipients = await loadRecipients(db, m.id, list, m.attempt);

  // cc/bcc on the suppression list are dropped here; `to` was checked by the dispatcher.
  const notes: string[] = [];
  const secondary = recipients.filter((r) => r.kind !== 'to' && r.status === 'pending');
  if (secondary.length) {
    const suppressed = await deps.suppressions.getMany(
      m.workspaceId,
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

  const publicUrl = deps.publicUrl().replace(/\/$/, '');
  let unsubscribeUrl: string | null = null;
  let html = content.html;
  const tracking = html ? await isTrackingEnabled(db, m.workspaceId, config.tracking.enabledByDefault) : false;
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
    date: deps.clock.now(),
    unsubscribeUrl,
  };
  const raw = await (deps.renderer ?? inlineRenderer).compose({ input, key });
  return { raw, messageId, envelopeFrom: verpAddress(m.publicId, bounceDomainOf(config)), recipients, notes };
}
