// `smtp-direct`: Postern as the MTA. Recipients are grouped by domain, one SMTP transaction per
// domain (in parallel); each domain's MX hosts are tried in preference order, moving to the next
// host on a connection failure or a temporary reply, stopping at the first permanent answer.
// A 250 is final delivery (`delivered`); a null MX or NXDOMAIN domain is `suppressed` without any
// connection (the address can never receive mail); 5xx is `failed`; the rest is `deferred`.
// Each host is tried under what the domain demands of TLS (transport-security.ts: DANE, MTA-STS);
// a host the policy excludes is skipped, and the delivery note names the TLS it went over.
import type { ChannelTransport, Delivery, DeliveryOutcome } from '../../channel.js';
import type { DnsResolver } from '../../lib/dns.js';
import type { Logger } from '../../lib/logger.js';
import { attempt, recordRejection, type AttemptSummary } from './attempt.js';
import { classifySmtpError, describeSmtpError } from './classify.js';
import { createRouteCache } from './mx.js';
import type { EmailDeps, WireMessage } from './prepare.js';
import type { DomainRateLimiter } from './rates.js';
import type { RecipientState } from './recipients.js';
import type { SmtpError, SmtpPool } from './smtp-pool.js';
import { describeTls, stsTestingFailure, type TransportSecurity } from './transport-security.js';

export interface DirectDeps extends EmailDeps {
  dns: DnsResolver;
  log: Logger;
  pool: SmtpPool;
  rates: DomainRateLimiter;
  security: TransportSecurity;
  connectionId: string;
}

const PROVIDER = 'smtp-direct';

export function createDirectTransport(deps: DirectDeps): ChannelTransport {
  const routeOf = createRouteCache(deps.dns, () => deps.clock.now().getTime());
  async function deliverDomain(
    message: string,
    domain: string,
    group: RecipientState[],
    prepared: WireMessage,
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
    const security = await deps.security.forDomain(domain);
    summary.notes.push(...security.notes);
    if (security.defer) return setAll('deferred', security.defer, true);

    let lastTemp: string | null = null;
    for (const host of route.hosts) {
      const plan = await deps.security.forHost(security, domain, host.name);
      if ('skip' in plan) {
        lastTemp = plan.skip;
        summary.notes.push(`skipped ${plan.skip}`);
        continue;
      }
      for (const address of host.addresses) {
        try {
          const res = await deps.pool.send(
            { host: host.name, address, security: plan.demand },
            { from: prepared.envelopeFrom, to: group.map((r) => r.address) },
            prepared.raw,
          );
          const testing = stsTestingFailure(security.sts, host.name, res.tls);
          if (testing) summary.notes.push(`MTA-STS (testing) of ${domain} would refuse this delivery: ${testing}`);
          const rejected = new Map(res.rejected.map((x) => [x.address.toLowerCase(), x.error]));
          for (const r of group) {
            r.attempts++;
            const err = rejected.get(r.address);
            if (!err) {
              r.status = 'accepted';
              r.response = `${host.name}: ${res.response} (${describeTls(res.tls, plan)})`;
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
          if (plan.demand.kind === 'pkix') lastTemp = `MTA-STS (enforce) of ${domain}: ${lastTemp}`;
          else if (plan.policy === 'DANE' && e.code !== 'EDANE') lastTemp = `DANE of ${host.name}: ${lastTemp}`;
          deps.log.debug({ message, domain, host: host.name, address, err: lastTemp }, 'mx attempt failed; trying the next');
        }
      }
    }
    setAll('deferred', lastTemp ?? `${domain}: no MX host reachable`, true);
  }

  return {
    name: PROVIDER,
    deliver: (delivery: Delivery): Promise<DeliveryOutcome> =>
      attempt(deps, delivery, PROVIDER, 'delivered', async (prepared, summary, todo) => {
        const groups = new Map<string, RecipientState[]>();
        for (const r of todo) groups.set(r.domain, [...(groups.get(r.domain) ?? []), r]);
        await Promise.all([...groups].map(([domain, group]) => deliverDomain(delivery.message.publicId, domain, group, prepared, summary)));
      }),
    close: () => deps.pool.close(),
  };
}
