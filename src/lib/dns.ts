// Every DNS lookup the daemon makes goes through this resolver, built from `dns.servers`
// (POSTERN_DNS_SERVERS). Tests point it at a loopback DNS server; production at the host's resolvers.
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
    reverse: (ip) => r.reverse(ip),
    resolve: (name, rrtype) => r.resolve(name, rrtype as 'A'),
  };
}

/** True for answers that mean "this name or record does not exist" rather than a failure to ask. */
export function isNoData(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === 'ENOTFOUND' || code === 'ENODATA';
}

export function isNxDomain(err: unknown): boolean {
  return (err as { code?: string })?.code === 'ENOTFOUND';
}
