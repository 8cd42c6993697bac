// The interface between the dispatcher and a transport: the message as a transport sees it and
// the outcome it reports (a channel's names, content and rendered output are the contract's,
// src/contract/channels.ts). The dispatcher owns the queue, the state machine, the timeline,
// retries and events (through the message ledger); a transport only attempts one delivery and says
// how it went. It imports only the contract (src/contract/), so any layer may depend on it.

import type { Channel, ChannelOutput } from './contract/channels.js';

// --- the transport interface ---------------------------------------------------------------

export interface Attachment {
  filename: string;
  contentType: string;
  /** Base64, as given on the send request. */
  content: string;
}

/** The message as a transport sees it. */
export interface OutboundMessage {
  /** Internal UUID. */
  id: string;
  /** msg_ public id. */
  publicId: string;
  workspaceId: string;
  livemode: boolean;
  channel: Channel;
  recipient: string;
  templateSlug: string | null;
  metadata: Record<string, string | number | boolean>;
  fromOverride: string | null;
  fromNameOverride: string | null;
  cc: string[];
  bcc: string[];
  replyTo: string | null;
  attachments: Attachment[];
  /** 1 on the first attempt. */
  attempt: number;
  createdAt: string;
}

export interface Delivery {
  message: OutboundMessage;
  /** Rendered output of the message's channel (EmailOutput for email, …). */
  content: ChannelOutput;
}

/** Extra timeline entries a transport wants recorded (per-recipient outcomes, provider steps). */
export type TimelineNote = string;

export type DeliveryOutcome =
  /** Final answer from the recipient's server (direct MX 250, push service delivered). */
  | { kind: 'delivered'; provider: string; providerConnectionId?: string | null; providerMessageId?: string | null; notes?: TimelineNote[] }
  /** Accepted by a relay or provider that reports final delivery later, if ever. */
  | { kind: 'sent'; provider: string; providerConnectionId?: string | null; providerMessageId?: string | null; notes?: TimelineNote[] }
  /** Permanent failure (5xx, invalid token). `suppress` adds the recipient to the suppression list. */
  | { kind: 'failed'; provider: string; providerConnectionId?: string | null; error: string; suppress?: boolean; notes?: TimelineNote[] }
  /** Never attempted: the address is invalid, null-MX, or suppressed. */
  | { kind: 'suppressed'; provider: string; providerConnectionId?: string | null; error: string; notes?: TimelineNote[] }
  /** Temporary failure (4xx, timeout, 429/5xx from a provider): retry per the backoff schedule. */
  | { kind: 'deferred'; provider: string; providerConnectionId?: string | null; error: string; retryAt?: Date; notes?: TimelineNote[] };

export interface ChannelTransport {
  /** e.g. 'smtp-direct', 'smtp-relay', 'twilio', 'apns', 'test'. */
  readonly name: string;
  deliver(delivery: Delivery): Promise<DeliveryOutcome>;
  close?(): Promise<void>;
}
