// `smtp-direct`: Postern as the MTA. Recipients are grouped by domain, one SMTP transaction per
// domain (in parallel); each domain's MX hosts are tried in preference order, moving to the next
// host on a connection failure or a temporary reply, stopping at the first permanent answer.
// A 250 is final delivery (`delivered`); a null MX or NXDOMAIN domain is `suppressed` without any
// connection (the address can never receive mail); 5xx is `failed`; the rest is `deferred`.
// Each host is tried under what the domain demands of TLS (transport-security.ts: DANE, MTA-STS);
// a host the policy excludes is skipped, and the delivery note names the TLS it went over.
// With source pools (sources.ts) each MX address is tried from the pool's source of its family,
// and a warming-up source takes the message out of its day's allowance first (warm-up.ts).
import type { ChannelTransport, Delivery, DeliveryOutcome } from '../../channel.js';
import type { DnsResolver } from '../../lib/dns.js';
import type { Logger } from '../../lib/logger.js';
import { attempt, recipientNote, recordRejection, type AttemptSummary } from './attempt.js';
import type { BounceCategory } from './bounce-rules.js';
import { describeSmtpError, type Verdict } from './classify.js';
import type { Destinations } from './destinations.js';
import { createRouteCache } from './mx.js';
import { domainOf } from '../../domains/index.js';
import type { EmailDeps, WireMessage } from './prepare.js';
import type { DomainRateLimiter } from './rates.js';
import type { RecipientState } from './recipients.js';
import type { SmtpError, SmtpPool } from './smtp-pool.js';
import type { Source, SourcePicker } from './sources.js';
import type { WarmUp } from './warm-up.js';
import { describeTls, stsTestingFailure, type TransportSecurity } from './transport-security.js';

export interface DirectDeps extends EmailDeps {
  dns: DnsResolver;
  log: Logger;
  pool: SmtpPool;
  rates: DomainRateLimiter;
  security: TransportSecurity;
  /** Holds, back-offs and counts per destination domain. */
  destinations: Destinations;
  connectionId: string;
  /** This node's share of `delivery.maxConnectionsPerHost` in a cluster; the whole cap when absent. */
  hostCap?: () => number;
  /** This node's share of a per-host cap the cluster's nodes split; the whole cap when absent. */
  hostShare?: (cap: number) => number;
  /** Source addresses and pools (delivery.sources); absent: the system's address. */
  sources?: SourcePicker;
  /** The slug of a workspace (a pool may be assigned by slug). */
  slugOf?: (workspaceId: string) => Promise<string | null>;
  /** Warm-up of sources (delivery.warmUp.enabled). */
  warmUp?: WarmUp;
}

// Refusals that earn a destination a back-off instead of a retry at full speed; those that say
// "slow down" lower its rate and connections too (adaptive-backoff.ts).
const THROTTLING: ReadonlySet<BounceCategory> = new Set(['rate_limited', 'policy']);
const SLOW_DOWN: BounceCategory = 'rate_limited';

const PROVIDER = 'smtp-direct';

const withCap = (cap: number | undefined) => (cap === undefined ? {} : { cap });

export function createDirectTransport(deps: DirectDeps): ChannelTransport {
  const routeOf = createRouteCache(deps.dns, () => deps.clock.now().getTime());
  // One domain's delivery, then what it came to for the destination's counts and back-off.
  async function deliverDomain(
    message: { publicId: string; workspaceId: string },
    domain: string,
    group: RecipientState[],
    prepared: WireMessage,
    summary: AttemptSummary,
  ): Promise<void> {
    const before = new Map(group.map((r) => [r, r.attempts]));
    const verdicts = new Map<RecipientState, Verdict>();
    const startedAt = deps.clock.now().getTime();
    // The source the transaction went from: warm-up counts the answers for it.
    const sent: { from?: { source: Source; sendingDomain: string } } = {};
    await tryDomain(message.publicId, message.workspaceId, domain, group, prepared, summary, verdicts, sent);
    const from = sent.from;
    let throttle: string | null = null;
    let slowDown: string | null = null;
    const warmUpCounts = { delivered: 0, bounced: 0, deferred: 0 };
    for (const r of group) {
      if (r.attempts === before.get(r)) continue; // held, rate-limited here: not an answer of the domain
      if (r.status === 'accepted') warmUpCounts.delivered++;
      else if (r.status === 'failed') warmUpCounts.bounced++;
      else if (r.status === 'deferred') warmUpCounts.deferred++;
      const v = verdicts.get(r);
      const error = r.response && v ? { text: r.response, category: v.category } : undefined;
      if (r.status === 'accepted') deps.destinations.record(message.workspaceId, domain, 'delivered');
      else if (r.status === 'failed') deps.destinations.record(message.workspaceId, domain, 'bounced', error);
      else if (r.status === 'deferred') deps.destinations.record(message.workspaceId, domain, 'deferred', error);
      if (r.status === 'deferred' && v && THROTTLING.has(v.category)) throttle = `${v.category}: ${r.response}`;
      if (r.status === 'deferred' && v?.category === SLOW_DOWN) slowDown = r.response;
    }
    if (slowDown) await deps.destinations.adaptive.throttled(domain, slowDown, startedAt);
    if (from && deps.warmUp)
      for (const [outcome, n] of Object.entries(warmUpCounts) as [keyof typeof warmUpCounts, number][])
        await deps.warmUp.record(from.source.name, from.sendingDomain, outcome, n);
    if (throttle) await deps.destinations.throttled(domain, throttle);
    else if (group.some((r) => r.status === 'accepted')) {
      await deps.destinations.recovered(domain);
      await deps.destinations.adaptive.accepted(domain);
    }
  }

  async function tryDomain(
    message: string,
    workspaceId: string,
    domain: string,
    group: RecipientState[],
    prepared: WireMessage,
    summary: AttemptSummary,
    verdicts: Map<RecipientState, Verdict>,
    sent: { from?: { source: Source; sendingDomain: string } },
  ): Promise<void> {
    const setAll = (status: RecipientState['status'], response: string, attempted: boolean, verdict?: Verdict) => {
      for (const r of group) {
        r.status = status;
        r.response = response;
        if (attempted) r.attempts++;
        if (verdict) verdicts.set(r, verdict);
        summary.notes.push(recipientNote(r, verdict?.category));
      }
    };

    const held = deps.destinations.gate(workspaceId, domain);
    if (held) {
      if (!summary.retryAt || held.retryAt < summary.retryAt) summary.retryAt = held.retryAt;
      return setAll('deferred', held.reason, false);
    }

    // The lowered rate of a destination that throttled first, then the configured ceiling.
    const slowed = await deps.destinations.adaptive.take(domain);
    if (slowed > 0) {
      const at = new Date(deps.clock.now().getTime() + slowed);
      if (!summary.retryAt || at < summary.retryAt) summary.retryAt = at;
      return setAll('deferred', `${domain} throttled: sending to it slower; next slot in ${Math.ceil(slowed / 1000)}s`, false);
    }
    const wait = await deps.rates.take(domain);
    if (wait > 0) {
      const at = new Date(deps.clock.now().getTime() + wait);
      if (!summary.retryAt || at < summary.retryAt) summary.retryAt = at;
      return setAll('deferred', `rate limit for ${domain} reached; next slot in ${Math.ceil(wait / 1000)}s`, false);
    }

    const route = await routeOf(domain);
    if (route.kind === 'no-mail') return setAll('suppressed', route.reason, false);
    if (route.kind === 'dns-error')
      return setAll('deferred', route.reason, true, { permanent: false, suppress: false, category: 'dns', rule: null });
    const security = await deps.security.forDomain(domain);
    summary.notes.push(...security.notes);
    if (security.defer) return setAll('deferred', security.defer, true);

    const sendingDomain = prepared.fromDomain ?? domainOf(prepared.envelopeFrom);
    const pool = deps.sources
      ? deps.sources.poolOf({ id: workspaceId, slug: deps.slugOf ? await deps.slugOf(workspaceId) : null }, sendingDomain)
      : null;
    // A warming-up source is asked once per attempt, whichever of its addresses is tried.
    const allowed = new Set<string>();

    let lastTemp: string | null = null;
    let lastVerdict: Verdict | undefined;
    // Fewer connections to each of its hosts while the destination is backed off: this node's share.
    const slowedConnections = deps.destinations.adaptive.connections(domain);
    const cap = () => {
      const full = deps.hostCap?.();
      if (slowedConnections === null) return full;
      const share = deps.hostShare ? deps.hostShare(slowedConnections) : slowedConnections;
      return full === undefined ? share : Math.min(full, share);
    };
    for (const host of route.hosts) {
      const plan = await deps.security.forHost(security, domain, host.name);
      if ('skip' in plan) {
        lastTemp = plan.skip;
        summary.notes.push(`skipped ${plan.skip}`);
        continue;
      }
      const family = pool ? deps.sources!.familyFor(domain, host.name) : null;
      for (const address of host.addresses) {
        let source: Source | null = null;
        if (pool) {
          const v6 = address.includes(':');
          if ((family === 'ipv4' && v6) || (family === 'ipv6' && !v6)) {
            lastTemp ??= `${domain}: no ${family === 'ipv4' ? 'IPv4' : 'IPv6'} address of ${host.name} (delivery.addressFamily)`;
            continue;
          }
          source = deps.sources!.pick(pool, domain, address);
          if (!source) {
            lastTemp = `${domain}: pool ${pool} has no ${v6 ? 'IPv6' : 'IPv4'} source for ${host.name} (${address})`;
            continue;
          }
          if (deps.warmUp?.applies(source.name) && !allowed.has(source.name)) {
            const wait = await deps.warmUp.take(source.name, sendingDomain, message);
            if (wait) {
              if (!summary.retryAt || wait.retryAt < summary.retryAt) summary.retryAt = wait.retryAt;
              return setAll('deferred', wait.reason, false);
            }
            allowed.add(source.name);
          }
          sent.from = { source, sendingDomain };
        }
        try {
          const res = await deps.pool.send(
            {
              host: host.name,
              address,
              security: plan.demand,
              ...withCap(cap()),
              ...(source ? { source: { address: source.address, ehlo: source.ehlo } } : {}),
            },
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
              r.response = `${host.name}: ${res.response} (${describeTls(res.tls, plan)}${source ? `; from ${source.name} ${source.address}` : ''})`;
              summary.notes.push(recipientNote(r));
            } else {
              verdicts.set(r, recordRejection(r, err, host.name, summary));
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
              verdicts.set(r, recordRejection(r, byAddr.get(r.address) ?? e, host.name, summary));
            }
            return;
          }
          const verdict = summary.judge(e);
          if (verdict.permanent) {
            for (const r of group) {
              r.attempts++;
              verdicts.set(r, recordRejection(r, e, host.name, summary));
            }
            return;
          }
          lastVerdict = verdict;
          lastTemp = describeSmtpError(e, host.name);
          if (plan.demand.kind === 'pkix') lastTemp = `MTA-STS (enforce) of ${domain}: ${lastTemp}`;
          else if (plan.policy === 'DANE' && e.code !== 'EDANE') lastTemp = `DANE of ${host.name}: ${lastTemp}`;
          deps.log.debug({ message, domain, host: host.name, address, err: lastTemp }, 'mx attempt failed; trying the next');
        }
      }
    }
    setAll('deferred', lastTemp ?? `${domain}: no MX host reachable`, true, lastVerdict);
  }

  return {
    name: PROVIDER,
    deliver: (delivery: Delivery): Promise<DeliveryOutcome> =>
      attempt(deps, delivery, PROVIDER, 'delivered', async (prepared, summary, todo) => {
        const groups = new Map<string, RecipientState[]>();
        for (const r of todo) groups.set(r.domain, [...(groups.get(r.domain) ?? []), r]);
        await Promise.all([...groups].map(([domain, group]) => deliverDomain(delivery.message, domain, group, prepared, summary)));
      }),
    close: () => deps.pool.close(),
  };
}
