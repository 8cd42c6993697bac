// The forwarding transport wraps the live email transport: a message tagged
// `metadata.forwardOf` is sent as the original received source (compose.ts) from an SRS envelope
// sender; every other message goes to the wrapped transport untouched. It answers with the same
// outcomes as the email transport (delivered / failed / suppressed / deferred), so forwards get
// the dispatcher's retries, timeline and lifecycle events like any other email.
import nodemailer from 'nodemailer';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { DnsResolver } from '../lib/dns.js';
import type { Logger } from '../lib/logger.js';
import type { ChannelTransport, Delivery, DeliveryOutcome } from '../outbound/channels/channel.js';
import { classifySmtpError, describeSmtpError, isHardBounce } from '../outbound/channels/email/classify.js';
import { resolveRoute } from '../outbound/channels/email/mx.js';
import { bounceDomainOf } from '../outbound/channels/email/prepare.js';
import { createDeliveryPool } from '../outbound/channels/email/index.js';
import type { SmtpError } from '../outbound/channels/email/smtp-pool.js';
import { composeForward } from './compose.js';
import { arcKey, srsSecret } from './keys.js';
import { srsForward } from './srs.js';

export interface ForwardTransportDeps {
  config: Config;
  db: Db;
  clock: Clock;
  dns: DnsResolver;
  log: Logger;
}

/** The ARC signing domain: `forwarding.arcDomain`, else the host name. */
export const arcDomainOf = (config: Config) => config.forwarding.arcDomain || config.hostname.toLowerCase();

export function withForwarding(deps: ForwardTransportDeps, inner: ChannelTransport): ChannelTransport {
  const { config, db, clock } = deps;
  const d = config.delivery;
  let pool: ReturnType<typeof createDeliveryPool> | null = null;
  let relay: nodemailer.Transporter | null = null;

  async function send(envelope: { from: string; to: string }, raw: Buffer): Promise<DeliveryOutcome> {
    if (d.mode === 'relay') {
      const provider = 'smtp-relay';
      relay ??= nodemailer.createTransport({ url: d.relayUrl, pool: true } as never);
      try {
        await relay.sendMail({ envelope: { from: envelope.from, to: [envelope.to] }, raw });
        return { kind: 'sent', provider, notes: [`forwarded to ${envelope.to} through the relay`] };
      } catch (err) {
        const e = err as SmtpError;
        return classifySmtpError(e) === 'permanent'
          ? { kind: 'failed', provider, error: describeSmtpError(e), suppress: isHardBounce(e) }
          : { kind: 'deferred', provider, error: describeSmtpError(e) };
      }
    }
    const provider = 'smtp-direct';
    pool ??= createDeliveryPool(config, deps.log);
    const domain = envelope.to.slice(envelope.to.lastIndexOf('@') + 1).toLowerCase();
    const route = await resolveRoute(deps.dns, domain);
    if (route.kind === 'no-mail') return { kind: 'suppressed', provider, error: route.reason };
    if (route.kind === 'dns-error') return { kind: 'deferred', provider, error: route.reason };
    let lastTemp = `${domain}: no MX host reachable`;
    for (const host of route.hosts) {
      for (const address of host.addresses) {
        try {
          const res = await pool.send({ host: host.name, address }, { from: envelope.from, to: [envelope.to] }, raw);
          const rejected = res.rejected[0]?.error;
          if (rejected) {
            return classifySmtpError(rejected) === 'permanent'
              ? { kind: 'failed', provider, error: describeSmtpError(rejected, host.name), suppress: isHardBounce(rejected) }
              : { kind: 'deferred', provider, error: describeSmtpError(rejected, host.name) };
          }
          return { kind: 'delivered', provider, notes: [`forwarded to ${envelope.to} (${host.name}: ${res.response})`] };
        } catch (err) {
          const e = (err as SmtpError).rejectedErrors?.[0] ?? (err as SmtpError);
          if (classifySmtpError(e) === 'permanent')
            return { kind: 'failed', provider, error: describeSmtpError(e, host.name), suppress: isHardBounce(e) };
          lastTemp = describeSmtpError(e, host.name);
        }
      }
    }
    return { kind: 'deferred', provider, error: lastTemp };
  }

  async function forward(delivery: Delivery, receivedId: string): Promise<DeliveryOutcome> {
    const m = delivery.message;
    const rcv = await db
      .selectFrom('received_messages as m')
      .innerJoin('inbound_raw as r', 'r.id', 'm.raw_id')
      .select(['m.envelope', 'm.parsed', 'r.source'])
      .where('m.public_id', '=', receivedId)
      .where('m.workspace_id', '=', m.workspaceId)
      .executeTakeFirst();
    const provider = d.mode === 'relay' ? 'smtp-relay' : 'smtp-direct';
    if (!rcv?.source) return { kind: 'failed', provider, error: `the original of ${receivedId} is no longer stored` };
    const envelope = JSON.parse(rcv.envelope) as { from: string };
    const arcResult = (JSON.parse(rcv.parsed) as { verdicts?: { arc?: { result?: string } } }).verdicts?.arc?.result ?? 'none';
    const cv = arcResult === 'pass' ? 'pass' : arcResult === 'fail' ? 'fail' : 'none';
    const now = clock.now();
    const raw = await composeForward({
      raw: Buffer.from(rcv.source),
      receivedId,
      messageId: m.publicId,
      to: m.recipient,
      hostname: config.hostname,
      date: now,
      arc: { domain: arcDomainOf(config), selector: config.forwarding.arcSelector, key: await arcKey(db, clock), cv },
    });
    const from = srsForward(await srsSecret(db, clock), envelope.from, bounceDomainOf(config), now);
    return send({ from, to: m.recipient }, raw);
  }

  return {
    name: inner.name,
    deliver(delivery) {
      const forwardOf = delivery.message.metadata.forwardOf;
      return typeof forwardOf === 'string' && forwardOf.startsWith('rcv_') ? forward(delivery, forwardOf) : inner.deliver(delivery);
    },
    async close() {
      await inner.close?.();
      await pool?.close();
      relay?.close();
    },
  };
}
