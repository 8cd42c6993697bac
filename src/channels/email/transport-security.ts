// What a recipient domain demands of the TLS its mail travels over, host by host: DANE (RFC 7672)
// when the domain's MX answer and the host's TLSA records are DNSSEC-authenticated (and
// `dns.dnssec` says the resolver validates), else its MTA-STS policy (RFC 8461), else nothing
// beyond `delivery.tls`. DANE takes precedence over MTA-STS for a host that has it (RFC 8461 §2).
//   DANE, usable TLSA records   → STARTTLS and a chain matching them, or that host is skipped;
//   DANE, only unusable records → STARTTLS, unauthenticated (RFC 7672 §2.2);
//   TLSA lookup failing         → that host is skipped (an attacker could be hiding the records);
//   MTA-STS enforce             → only MX hosts the policy lists, over TLS verified for their name;
//   MTA-STS testing             → delivered as without it; a host that would fail is noted;
//   no policy                   → delivery.tls (opportunistic by default).
// Answers are remembered for a minute (like routes), so a bulk send asks DNS once a minute.
import type { WireDns } from '../../lib/dns-wire.js';
import { isUsableTlsa, type Tlsa } from './dane.js';
import { mxMatches, type MtaSts, type StsPolicy } from './mta-sts.js';
import type { TlsDemand, TlsOutcome } from './smtp-pool.js';

/** The policy that decided a connection's TLS, as the timeline names it. */
export type TlsPolicyName = 'opportunistic' | 'MTA-STS' | 'DANE';

export interface DomainSecurity {
  /** MTA-STS policy in force (enforce or testing; a `none` policy is no policy). */
  sts: StsPolicy | null;
  /** The MX answer was authenticated: each host's TLSA records decide. */
  dane: boolean;
  /** Things worth a timeline note (a policy that could not be fetched). */
  notes: string[];
  /** Set when no delivery may be tried at all (the DNSSEC MX lookup failed). */
  defer?: string;
}

export type HostPlan = { demand: TlsDemand; policy: TlsPolicyName | null } | { skip: string };

export interface TransportSecurity {
  forDomain(domain: string): Promise<DomainSecurity>;
  forHost(security: DomainSecurity, domain: string, host: string): Promise<HostPlan>;
}

export interface TransportSecurityDeps {
  /** Absent when `delivery.mtaSts.enabled` is false. */
  mtaSts?: MtaSts;
  /** Absent unless `dns.dnssec` and `delivery.dane` are both on. */
  wire?: WireDns;
  now: () => number;
}

const MEMORY_MS = 60_000;

function remembered<T>(now: () => number, compute: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const memory = new Map<string, { at: number; value: Promise<T> }>();
  return (key) => {
    const hit = memory.get(key);
    if (hit && now() - hit.at < MEMORY_MS) return hit.value;
    const value = compute(key);
    memory.set(key, { at: now(), value });
    if (memory.size > 10_000) memory.delete(memory.keys().next().value!);
    value.catch(() => memory.delete(key));
    return value;
  };
}

type TlsaAnswer = { kind: 'none' } | { kind: 'records'; records: Tlsa[] };

export function createTransportSecurity(deps: TransportSecurityDeps): TransportSecurity {
  const mxSecure = remembered(deps.now, async (domain) => {
    const answer = await deps.wire!.mx(domain);
    return answer.authenticated && answer.rcode === 'NOERROR';
  });
  const tlsaOf = remembered(deps.now, async (host): Promise<TlsaAnswer> => {
    const answer = await deps.wire!.tlsa(`_25._tcp.${host}`);
    if (answer.rcode === 'NXDOMAIN' || (answer.rcode === 'NOERROR' && answer.records.length === 0)) return { kind: 'none' };
    if (answer.rcode !== 'NOERROR') throw new Error(`${answer.rcode}`);
    // Records the resolver did not vouch for are as good as none (RFC 7672 §2.2).
    return answer.authenticated ? { kind: 'records', records: answer.records } : { kind: 'none' };
  });

  return {
    async forDomain(domain) {
      const notes: string[] = [];
      let dane = false;
      if (deps.wire) {
        try {
          dane = await mxSecure(domain);
        } catch (err) {
          return { sts: null, dane: false, notes, defer: `DANE: the DNSSEC lookup of ${domain} MX failed (${(err as Error).message})` };
        }
      }
      let sts: StsPolicy | null = null;
      if (deps.mtaSts) {
        const found = await deps.mtaSts.lookup(domain);
        if (found.problem) notes.push(found.problem);
        if (found.policy && found.policy.mode !== 'none') sts = found.policy;
      }
      return { sts, dane, notes };
    },

    async forHost(security, domain, host) {
      if (security.dane) {
        let tlsa: TlsaAnswer;
        try {
          tlsa = await tlsaOf(host);
        } catch (err) {
          return { skip: `${host}: DANE: the TLSA lookup of _25._tcp.${host} failed (${(err as Error).message})` };
        }
        if (tlsa.kind === 'records') {
          const usable = tlsa.records.filter(isUsableTlsa);
          if (usable.length === 0) return { demand: { kind: 'encrypt' }, policy: 'DANE' };
          return { demand: { kind: 'dane', tlsa: usable, names: [host, domain] }, policy: 'DANE' };
        }
      }
      const sts = security.sts;
      if (sts?.mode === 'enforce') {
        if (!mxMatches(sts.mx, host))
          return { skip: `${host}: MTA-STS (enforce): not a host the policy of ${domain} lists (${sts.mx.join(', ')})` };
        return { demand: { kind: 'pkix' }, policy: 'MTA-STS' };
      }
      if (sts?.mode === 'testing') return { demand: { kind: 'observe' }, policy: 'MTA-STS' };
      return { demand: { kind: 'floor' }, policy: null };
    },
  };
}

/** The TLS part of a delivery's timeline note: `TLSv1.3 TLS_AES_256_GCM_SHA384, DANE-EE 3 1 1`. */
export function describeTls(tls: TlsOutcome | null, plan: { demand: TlsDemand; policy: TlsPolicyName | null }): string {
  if (!tls) return 'no TLS';
  const how =
    plan.policy === 'DANE'
      ? (tls.dane ?? 'DANE, unauthenticated: no usable TLSA record')
      : plan.policy === 'MTA-STS' && plan.demand.kind === 'pkix'
        ? 'MTA-STS enforce, certificate verified'
        : tls.verified
          ? `${plan.policy === 'MTA-STS' ? 'MTA-STS testing' : 'opportunistic'}, certificate verified`
          : `${plan.policy === 'MTA-STS' ? 'MTA-STS testing' : 'opportunistic'}, certificate not verified: ${tls.verifyError ?? 'unknown'}`;
  return `TLS ${tls.protocol} ${tls.cipher}, ${how}`;
}

/** What MTA-STS testing would have refused about a delivery that went ahead (RFC 8461 §5), or null. */
export function stsTestingFailure(sts: StsPolicy | null, host: string, tls: TlsOutcome | null): string | null {
  if (sts?.mode !== 'testing') return null;
  if (!mxMatches(sts.mx, host)) return `${host} is not listed in the policy (${sts.mx.join(', ')})`;
  if (!tls) return `${host} offered no STARTTLS`;
  if (!tls.verified) return `${host}'s certificate did not verify (${tls.verifyError ?? 'unknown'})`;
  return null;
}
