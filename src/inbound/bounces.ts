// Mail to the bounce domain (VERP return paths, bounces+<msg id>@<bounce domain>) is not routed to
// addresses: the listener hands it to a BounceHandler before replying 250, so the handler must
// make it durable itself. The email sender implements it (DSN processing, src/outbound/bounces.ts).

export interface BounceInput {
  raw: Buffer;
  mailFrom: string;
  /** The recipients of this transaction that are on the bounce domain. */
  recipients: string[];
}

export interface BounceHandler {
  handle(input: BounceInput): Promise<void>;
}
