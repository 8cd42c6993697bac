// `smtp-direct`: Postern as the MTA. Recipients are grouped by domain, one SMTP transaction per
// domain (in parallel); each domain's MX hosts are tried in preference order, moving to the next
// host on a connection failure or a temporary reply, stopping at the first permanent answer.
// A 250 is final delivery (`delivered`); a null MX or NXDOMAIN domain is `suppressed` without any
// connection (the address can never receive mail); 5xx is `failed`; the rest is `deferred`.
import type { DnsResolver } from '../../../lib/dns.js';
import type { Logger } from '../../../lib/logger.js';
import type { ChannelTransport, Delivery, DeliveryOutcome } from '../channel.js';
import { classifySmtpError, describeSmtpError, isHardBounce } from './classify.js';
import { createRouteCache } from './mx.js';
import { outcomeOf, startAttempt, type AttemptSummary } from './outcome.js';
import type { EmailDeps } from './prepare.js';
import type { DomainRateLimiter } from './rates.js';
import { saveRecipients, type RecipientState } from './recipients.js';
import type { SmtpError, SmtpPool } from './smtp-pool.js';

export interface DirectDeps extends EmailDeps {
  dns: DnsResolver;
  log: Logger;
  pool: SmtpPool;
  rates: DomainRateLimiter;
  connectionId: string;
}

const PROVIDER = 'smtp-direct';

export function createDirectTransport(deps: DirectDeps): ChannelTransport {
  const routeOf = createRouteCache(deps.dns, () => deps.clock.now().getTime());
  async function deliverDomain(
    domain: string,
    group: RecipientState[],
    prepared: { raw: Buffer; envelopeFrom: string },
    summary: AttemptSummary,
  ): Promise<void> {
    const setAll = (status: RecipientState['status'], response: string, attempted: boolean) => {
      for (const r of group) {
        r.status = status;
        r.response = response;
        if (attempted) r.attempts++;
        summary.notes.push(`${r.kind} ${r.address}: ${status === 'accepted' ? 'delivered' : status} (${response})`);
      }
    };

    const wait = deps.rates.take(domain);
    if (wait > 0) {
      const at = new Date(deps.clock.now().getTime() + wait);
      if (!summary.retryAt || at < summary.retryAt) summary.retryAt = at;
      return setAll('deferred', `rate limit for ${domain} reached; next slot in ${Math.ceil(wait / 1000)}s`, false);
    }

    const route = await routeOf(domain);
    if (route.kind === 'no-mail') return setAll('suppressed', route.reason, false);
    if (route.kind === 'dns-error') return setAll('deferred', route.reason, true);

    let lastTemp: string | null = null;
    for (const host of route.hosts) {
      for (const address of host.addresses) {
        try {
          const res = await deps.pool.send(
            { host: host.name, address },
            { from: prepared.envelopeFrom, to: group.map((r) => r.address) },
            prepared.raw,
          );
          const rejected = new Map(res.rejected.map((x) => [x.address.toLowerCase(), x.error]));
          for (const r of group) {
            r.attempts++;
            const err = rejected.get(r.address);
            if (!err) {
              r.status = 'accepted';
              r.response = `${host.name}: ${res.response}${res.secure ? ' (TLS)' : ''}`;
              summary.notes.push(`${r.kind} ${r.address}: delivered (${r.response})`);
            } else {
              recordRejection(r, err, host.name, summary);
            }
          }
          return;
        } catch (err) {
          const e = err as SmtpError;
          if (e.rejectedErrors?.length) {
            // Every recipient refused at RCPT: each gets its own answer.
            const byAddr = new Map(e.rejectedErrors.map((x) => [String((x as { recipient?: string }).recipient ?? '').toLowerCase(), x]));
            for (const r of group) {
              r.attempts++;
              recordRejection(r, byAddr.get(r.address) ?? e, host.name, summary);
            }
            return;
          }
          if (classifySmtpError(e) === 'permanent') {
            for (const r of group) {
              r.attempts++;
              recordRejection(r, e, host.name, summary);
            }
            return;
          }
          lastTemp = describeSmtpError(e, host.name);
          deps.log.debug({ domain, host: host.name, address, err: lastTemp }, 'mx attempt failed; trying the next');
        }
      }
    }
    setAll('deferred', lastTemp ?? `${domain}: no MX host reachable`, true);
  }

  return {
    name: PROVIDER,
    async deliver(delivery: Delivery): Promise<DeliveryOutcome> {
      const { prepared, summary, todo } = await startAttempt(deps, delivery, PROVIDER);
      const groups = new Map<string, RecipientState[]>();
      for (const r of todo) groups.set(r.domain, [...(groups.get(r.domain) ?? []), r]);
      await Promise.all([...groups].map(([domain, group]) => deliverDomain(domain, group, prepared, summary)));
      await finishAttempt(deps, delivery, summary, todo, prepared.notes.length > 0);
      return outcomeOf(summary, 'delivered');
    },
    close: () => deps.pool.close(),
  };
}

function recordRejection(r: RecipientState, err: SmtpError, host: string, summary: AttemptSummary): void {
  const permanent = classifySmtpError(err) === 'permanent';
  r.status = permanent ? 'failed' : 'deferred';
  r.response = describeSmtpError(err, host);
  if (permanent && isHardBounce({ ...err, command: err.command ?? 'RCPT TO' })) summary.hardBounces.add(r.address);
  summary.notes.push(`${r.kind} ${r.address}: ${permanent ? 'failed' : 'deferred'} (${r.response})`);
}

/** Saves the attempted recipients and suppresses hard-bounced addresses. */
export async function finishAttempt(
  deps: EmailDeps,
  delivery: Delivery,
  summary: AttemptSummary,
  attempted: RecipientState[],
  suppressedSome: boolean,
): Promise<void> {
  const changed = suppressedSome ? summary.recipients.filter((r) => r.status !== 'pending') : attempted;
  // A lone recipient with a final answer needs no row: the message's own status says it all, and
  // a retry never happens. Rows matter for retries and for messages with several recipients.
  const lone = summary.recipients.length === 1 && !['pending', 'deferred'].includes(summary.recipients[0].status);
  if (!lone) await saveRecipients(deps.db, delivery.message.id, changed, deps.clock.now().toISOString());
  for (const address of summary.hardBounces) {
    const r = summary.recipients.find((x) => x.address === address);
    await deps.suppressions.add(delivery.message.workspaceId, {
      address,
      reason: 'bounce',
      detail: r?.response ?? null,
      messageId: delivery.message.publicId,
    });
  }
}
