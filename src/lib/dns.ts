// Every DNS lookup the daemon makes goes through this resolver, built from `dns.servers`
// (POSTERN_DNS_SERVERS). Tests point it at a loopback DNS server; production at the host's resolvers.
// Only DNS answers: a reverse lookup is a PTR query of its in-addr.arpa/ip6.arpa name, because
// c-ares's own reverse (gethostbyaddr) reads /etc/hosts first, where 127.0.0.1 or the host's own
// address names whatever the machine calls itself, not what receivers see.
import { Resolver } from 'node:dns/promises';

export interface MxRecord {
  exchange: string;
  priority: number;
}

export interface DnsResolver {
  resolveMx(name: string): Promise<MxRecord[]>;
  resolveTxt(name: string): Promise<string[][]>;
  resolve4(name: string): Promise<string[]>;
  resolve6(name: string): Promise<string[]>;
  resolvePtr(name: string): Promise<string[]>;
  reverse(ip: string): Promise<string[]>;
  /** The generic form mailauth's `resolver` option expects. */
  resolve(name: string, rrtype: string): Promise<unknown>;
}

export function createResolver(servers: string[], timeoutMs: number): DnsResolver {
  const r = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) r.setServers(servers);
  return {
    resolveMx: (name) => r.resolveMx(name),
    resolveTxt: (name) => r.resolveTxt(name),
    resolve4: (name) => r.resolve4(name),
    resolve6: (name) => r.resolve6(name),
    resolvePtr: (name) => r.resolvePtr(name),
    reverse: (ip) => r.resolvePtr(reverseName(ip)),
    resolve: (name, rrtype) => r.resolve(name, rrtype as 'A'),
  };
}

/** The reverse-lookup name of an address: 10.113.0.203.in-addr.arpa, or the ip6.arpa nibbles. */
export function reverseName(ip: string): string {
  if (!ip.includes(':')) return ip.split('.').reverse().join('.') + '.in-addr.arpa';
  const [head, tail = ''] = ip.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const full = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t].map((g) => g.padStart(4, '0'));
  return full.join('').split('').reverse().join('.') + '.ip6.arpa';
}

/** True for answers that mean "this name or record does not exist" rather than a failure to ask. */
export function isNoData(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === 'ENOTFOUND' || code === 'ENODATA';
}

export function isNxDomain(err: unknown): boolean {
  return (err as { code?: string })?.code === 'ENOTFOUND';
}
