// `smtp-relay`: every message goes to one smarthost (`delivery.relayUrl`, smtp:// or smtps://,
// credentials in the URL) over a nodemailer connection pool. The relay's 250 means "accepted for
// delivery", so the outcome is `sent`; final delivery is only known if a DSN comes back later.
import nodemailer from 'nodemailer';
import type { ChannelTransport, Delivery, DeliveryOutcome } from '../channel.js';
import { classifySmtpError, describeSmtpError, isHardBounce } from './classify.js';
import { finishAttempt } from './direct.js';
import { outcomeOf, startAttempt } from './outcome.js';
import type { EmailDeps } from './prepare.js';
import type { SmtpError } from './smtp-pool.js';

export interface RelayDeps extends EmailDeps {
  connectionId: string;
}

const PROVIDER = 'smtp-relay';

export function createRelayTransport(deps: RelayDeps): ChannelTransport {
  const { delivery: d, hostname } = deps.config;
  const transport = nodemailer.createTransport({
    url: d.relayUrl,
    pool: true,
    maxConnections: d.maxConnections,
    maxMessages: d.messagesPerConnection,
    name: hostname,
    ignoreTLS: d.tls === 'none',
    requireTLS: d.tls === 'require',
    tls: { rejectUnauthorized: d.tls === 'verify' || d.tls === 'require' },
    connectionTimeout: d.timeoutMs,
    greetingTimeout: d.timeoutMs,
    socketTimeout: d.timeoutMs,
  } as nodemailer.TransportOptions);
  const relayHost = (() => {
    try {
      return new URL(d.relayUrl).host;
    } catch {
      return 'relay';
    }
  })();

  return {
    name: PROVIDER,
    async deliver(delivery: Delivery): Promise<DeliveryOutcome> {
      const { prepared, summary, todo } = await startAttempt(deps, delivery, PROVIDER);
      if (todo.length) {
        const reject = (r: (typeof todo)[number], err: SmtpError) => {
          const permanent = classifySmtpError(err) === 'permanent';
          r.status = permanent ? 'failed' : 'deferred';
          r.response = describeSmtpError(err, relayHost);
          if (permanent && isHardBounce({ ...err, command: err.command ?? 'RCPT TO' })) summary.hardBounces.add(r.address);
          summary.notes.push(`${r.kind} ${r.address}: ${r.status} (${r.response})`);
        };
        try {
          const info = (await transport.sendMail({
            envelope: { from: prepared.envelopeFrom, to: todo.map((r) => r.address) },
            raw: prepared.raw,
          })) as {
            accepted: string[];
            rejected: string[];
            rejectedErrors?: (SmtpError & { recipient?: string })[];
            response: string;
          };
          const rejected = new Map((info.rejectedErrors ?? []).map((e) => [String(e.recipient ?? '').toLowerCase(), e]));
          for (const r of todo) {
            r.attempts++;
            const err = rejected.get(r.address);
            if (err) reject(r, err);
            else {
              r.status = 'accepted';
              r.response = `${relayHost}: ${info.response}`;
              summary.notes.push(`${r.kind} ${r.address}: sent (${r.response})`);
            }
          }
        } catch (err) {
          const e = err as SmtpError;
          const byAddr = new Map(
            (e.rejectedErrors ?? []).map((x) => [String((x as { recipient?: string }).recipient ?? '').toLowerCase(), x]),
          );
          for (const r of todo) {
            r.attempts++;
            reject(r, byAddr.get(r.address) ?? e);
          }
        }
      }
      await finishAttempt(deps, delivery, summary, todo, prepared.notes.length > 0);
      return outcomeOf(summary, 'sent');
    },
    async close() {
      transport.close();
    },
  };
}
