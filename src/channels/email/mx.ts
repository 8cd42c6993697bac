// Where mail for a domain goes (RFC 5321 §5.1): the MX hosts in preference order, or the domain
// itself (implicit MX) when it has A/AAAA but no MX. A null MX (RFC 7505: one MX of preference 0 and
// exchange ".") and a domain that does not exist (NXDOMAIN) mean "this domain accepts no mail":
// permanent, never retried. Any other DNS trouble (timeout, SERVFAIL) is temporary.
import { isNoData, isNxDomain, type DnsResolver, type MxRecord } from '../../lib/dns.js';

export interface MxHost {
  /** The exchange name, used for TLS servername and pooling. */
  name: string;
  priority: number;
  /** IPv4 then IPv6 addresses of the exchange. */
  addresses: string[];
}

export type Route = { kind: 'hosts'; hosts: MxHost[] } | { kind: 'no-mail'; reason: string } | { kind: 'dns-error'; reason: string };

// A failed lookup's code (ENOTFOUND, ETIMEOUT, …), or the error itself.
const describe = (err: unknown): string =>
  (err as { code?: string } | null)?.code ?? (err instanceof Error ? err.toString() : JSON.stringify(err));

const isIp = (s: string) => /^\d+\.\d+\.\d+\.\d+$/.test(s) || s.includes(':');

async function addressesOf(dns: DnsResolver, name: string): Promise<{ addresses: string[]; error?: unknown }> {
  if (isIp(name)) return { addresses: [name] };
  const [v4, v6] = await Promise.allSettled([dns.resolve4(name), dns.resolve6(name)]);
  const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
  const failures = [v4, v6].filter((r) => r.status === 'rejected').map((r) => r.reason);
  const hardError = failures.find((e) => !isNoData(e));
  return { addresses, error: addresses.length === 0 ? (hardError ?? failures[0]) : undefined };
}

/**
 * A resolver of routes that remembers answers for `ttlMs` (clock time): a bulk send to one domain
 * asks DNS once, not once per message. Temporary DNS errors are not remembered.
 */
export function createRouteCache(dns: DnsResolver, now: () => number, ttlMs = 60_000): (domain: string) => Promise<Route> {
  const cache = new Map<string, { at: number; route: Promise<Route> }>();
  return (domain) => {
    const hit = cache.get(domain);
    if (hit && now() - hit.at < ttlMs) return hit.route;
    const route = resolveRoute(dns, domain);
    cache.set(domain, { at: now(), route });
    if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
    void route.then(
      (r) => r.kind === 'dns-error' && cache.delete(domain),
      () => cache.delete(domain),
    );
    return route;
  };
}

/** Resolves the delivery route of a recipient domain. */
async function resolveRoute(dns: DnsResolver, domain: string): Promise<Route> {
  let mx: MxRecord[];
  try {
    mx = await dns.resolveMx(domain);
  } catch (err) {
    if (isNxDomain(err)) return { kind: 'no-mail', reason: `${domain}: domain does not exist (NXDOMAIN)` };
    if (!isNoData(err)) return { kind: 'dns-error', reason: `${domain}: MX lookup failed (${describe(err)})` };
    mx = [];
  }
  if (mx.length === 1 && (mx[0].exchange === '' || mx[0].exchange === '.')) {
    return { kind: 'no-mail', reason: `${domain}: null MX, the domain accepts no mail (RFC 7505)` };
  }
  if (mx.length === 0) {
    // Implicit MX: the domain's own address records.
    const { addresses, error } = await addressesOf(dns, domain);
    if (addresses.length) return { kind: 'hosts', hosts: [{ name: domain, priority: 0, addresses }] };
    if (!error || isNoData(error)) return { kind: 'no-mail', reason: `${domain}: no MX and no address records` };
    return { kind: 'dns-error', reason: `${domain}: address lookup failed (${describe(error)})` };
  }
  const sorted = [...mx].filter((r) => r.exchange !== '' && r.exchange !== '.').sort((a, b) => a.priority - b.priority);
  const hosts: MxHost[] = [];
  let lastError: unknown;
  for (const r of sorted) {
    const { addresses, error } = await addressesOf(dns, r.exchange);
    if (addresses.length) hosts.push({ name: r.exchange.toLowerCase(), priority: r.priority, addresses });
    else lastError = error;
  }
  if (hosts.length) return { kind: 'hosts', hosts };
  // MX hosts that do not resolve are a fixable misconfiguration of the remote side: retry.
  if (!lastError || isNoData(lastError)) return { kind: 'dns-error', reason: `${domain}: no MX host has an address` };
  return { kind: 'dns-error', reason: `${domain}: MX host lookup failed (${describe(lastError)})` };
}
