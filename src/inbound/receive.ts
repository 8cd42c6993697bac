// Receiving one SMTP transaction, as named steps: verify (SPF/DKIM/DMARC/ARC) → parse → route the
// recipients into one message per (workspace, address) → store raw + parsed + outbox event in one
// transaction → announce after commit. The listener replies 250 only when this resolves, so a 250
// always means the message is durable. The bounce domain is not handled here (see bounces.ts).
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { EventBus } from '../events/bus.js';
import type { Clock } from '../lib/clock.js';
import type { DnsResolver } from '../lib/dns.js';
import type { Ids } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { Committer } from './group-commit.js';
import type { StoredParsed } from './messages.js';
import { parseMessage } from './parse.js';
import type { Route } from './routing.js';
import type { StoredMessage, StoreRequest } from './store.js';
import { cachedLookup, verifyMessage } from './verify.js';

export type MailboxRoute = Extract<Route, { kind: 'mailbox' }>;

export interface IncomingMail {
  raw: Buffer;
  mailFrom: string;
  routes: MailboxRoute[];
  ip: string;
  helo: string;
}

export type { StoredMessage } from './store.js';

export interface Receiver {
  receive(mail: IncomingMail): Promise<StoredMessage[]>;
}

export interface ReceiverDeps {
  config: Config;
  db: Db;
  clock: Clock;
  ids: Ids;
  dns: DnsResolver;
  log: Logger;
  bus: EventBus;
  committer: Committer;
  publicUrl: () => string;
}


export function createReceiver(deps: ReceiverDeps): Receiver {
  const { config, clock, ids, dns, log, bus, committer, publicUrl } = deps;
  const lookup = cachedLookup(dns);

  return {
    async receive(mail) {
      const { verdicts, headers } = await verifyMessage(lookup, { raw: mail.raw, ip: mail.ip, helo: mail.helo, mailFrom: mail.mailFrom, mta: config.hostname });
      const stored = Buffer.concat([Buffer.from(headers, 'utf8'), mail.raw]);
      const parsed = await parseMessage(mail.raw, config.inbound.maxBodyBytes);
      const storedParsed: StoredParsed = {
        from: parsed.from,
        to: parsed.to,
        cc: parsed.cc,
        messageId: parsed.messageId,
        inReplyTo: parsed.inReplyTo,
        text: parsed.text,
        html: parsed.html,
        strippedReply: parsed.strippedReply,
        truncated: parsed.truncated,
        headers: parsed.headers,
        attachments: parsed.attachments,
        verdicts,
      };
      const parsedJson = JSON.stringify(storedParsed);

      // One message per (workspace, matched address); unmatched recipients of a workspace share one.
      const groups = new Map<string, MailboxRoute[]>();
      for (const r of mail.routes) {
        const key = `${r.workspaceId}:${r.address?.id ?? '-'}`;
        groups.set(key, [...(groups.get(key) ?? []), r]);
      }

      const receivedAt = clock.now().toISOString();
      const req: StoreRequest = { rawId: ids.uuid(), source: stored, receivedAt, publicUrl: publicUrl(), groups: [] };
      for (const routes of groups.values()) {
        const first = routes[0];
        const address = first.address;
        req.groups.push({
          row: {
            id: ids.uuid(),
            public_id: ids.publicId('rcv'),
            workspace_id: first.workspaceId,
            livemode: address ? address.livemode : 1,
            status: address ? 'received' : 'dropped',
            address_id: address?.id ?? null,
            address: address && first.exact ? address.address : null,
            plus_tag: first.plusTag,
            raw_id: req.rawId,
            envelope: JSON.stringify({ from: mail.mailFrom, to: routes.map((r) => r.rcpt) }),
            from_email: parsed.from.email,
            parsed: parsedJson,
            subject: parsed.subject,
            size_bytes: stored.length,
            received_at: receivedAt,
          },
          quota: config.inbound.monthlyQuota[first.plan] ?? 0,
          eventId: ids.publicId('evt'),
          endpointId: address?.webhook_endpoint_id ?? null,
          forwards: !!address?.forward_to,
        });
      }

      const result = await committer.store(req);
      if (result.events.length > 0) bus.publish('events.recorded', { ids: result.events, type: 'message.received' });
      for (const m of result.out) bus.publish('inbound.stored', m);
      log.debug({ messages: result.out.map((m) => `${m.id}:${m.status}`), size: mail.raw.length }, 'inbound stored');
      return result.out;
    },
  };
}
