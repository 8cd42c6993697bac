// Mail to the bounce domain (VERP return paths, bounces+<msg id>@<bounce domain>) is not routed to
// addresses: the listener hands it to a BounceHandler before replying 250, so the handler must
// make it durable itself. The email sender implements DSN processing; the default only logs.
import type { Logger } from '../lib/logger.js';

export interface BounceInput {
  raw: Buffer;
  mailFrom: string;
  /** The recipients of this transaction that are on the bounce domain. */
  recipients: string[];
}

export interface BounceHandler {
  handle(input: BounceInput): Promise<void>;
}

export function loggingBounceHandler(log: Logger): BounceHandler {
  return {
    async handle({ raw, mailFrom, recipients }) {
      log.info({ mailFrom, recipients, size: raw.length }, 'bounce received; no bounce handler installed, discarded');
    },
  };
}
