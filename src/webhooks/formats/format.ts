import type { EventType } from '../../contract/webhooks.js'; // What a payload format is (the shape of a delivery's body and how it is authenticated), and
// what every vendor format reads off Postern's events: the Message an outbound event carries.

/** A stored event as a format reads it: `data` is the JSON text of the event's object. */
export interface StoredEvent {
  id: string;
  type: EventType;
  createdAt: string;
  data: string;
}

/** What signs an attempt: the endpoint's `whsec_` secrets (the previous one during a rotation) and its ECDSA key (sendgrid). */
export interface SigningKeys {
  secrets: string[];
  /** PKCS#8 PEM of the endpoint's P-256 private key; null for the formats that do not use one. */
  ecdsaKey: string | null;
}

export interface PayloadFormat {
  /** The event types this format has an event for (null: every type); others are not sent to its endpoints. */
  types: readonly EventType[] | null;
  /** The exact body POSTed: built from the stored event only, so it is the same on every retry. */
  body(ev: StoredEvent): string;
  /** The headers that authenticate one attempt made at `timestamp` (Unix seconds). */
  sign(ev: StoredEvent, body: string, timestamp: number, keys: SigningKeys): Record<string, string>;
}

/** The fields of a Message (GET /v1/messages/{id}) the vendor formats read. */
export interface EventMessage {
  publicId: string;
  recipient: string;
  status: string;
  error: string | null;
  metadata: Record<string, string | number | boolean> | null;
  providerMessageId: string | null;
  fromOverride: string | null;
  openedAt: string | null;
  clickedAt: string | null;
  createdAt: string;
  /** message.clicked: the URL clicked. */
  link?: string;
}

export const messageOf = (ev: StoredEvent): EventMessage => JSON.parse(ev.data) as EventMessage;

/** Unix seconds of an ISO time. */
export const unixSeconds = (iso: string): number => Math.floor(Date.parse(iso) / 1000);

/** The enhanced status code (RFC 3463) in an SMTP reply's text, if any. */
export const enhancedStatus = (text: string | null): string | null => /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(text ?? '')?.[1] ?? null;
