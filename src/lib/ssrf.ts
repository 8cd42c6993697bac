// The SSRF guard. A URL chosen by a workspace (a webhook endpoint, a web-push subscription, a
// provider's base URL) or by a recipient's domain (its MTA-STS policy host), not by the operator of
// Postern, may by default not reach private, loopback,
// link-local or otherwise internal addresses. The check runs twice: when the URL is given (a clear
// error), and at connect time on the address actually dialled (so DNS that changes later, or
// rebinding, cannot reach inside). A policy's `allowPrivate` lifts the rule; its `allowList` lifts
// it for named hosts, IP addresses or CIDR ranges. Each user of the guard has its own policy
// (settings), named in its refusals. IPv4 inside IPv6 is judged by what it reaches where it does
// (IPv4-mapped, NAT64's well-known prefix); the transition forms no destination needs are refused
// whole, as Go's IANA-registry guards (code.dny.dev/ssrf) refuse them: IPv4-compatible,
// IPv4-translated, 6to4, Teredo (its IPv4 is inverted and reached through relays) and NAT64
// local-use (the IPv4's place depends on the operator's prefix length).
import { BlockList, isIP } from 'node:net';
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { DnsResolver } from './dns.js';

const PRIVATE_V4 = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const;
const PRIVATE_V6 = [
  ['::1', 128], // loopback
  ['::', 96], // the unspecified address and IPv4-compatible ::a.b.c.d (deprecated, RFC 4291 §2.5.5.1)
  ['::ffff:0:0:0', 96], // IPv4-translated ::ffff:0:a.b.c.d (SIIT, RFC 2765)
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['100::', 64], // discard-only
  ['2001:db8::', 32], // documentation
  ['2001::', 32], // Teredo: the IPv4 client address inverted in the last 32 bits
  ['2002::', 16], // 6to4: an IPv4 address in bits 16–48
  ['64:ff9b:1::', 48], // NAT64 local-use (RFC 8215): where its IPv4 sits depends on the operator's prefix
] as const;

const privateRanges = new BlockList();
for (const [net, prefix] of PRIVATE_V4) privateRanges.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of PRIVATE_V6) privateRanges.addSubnet(net, prefix, 'ipv6');

/** The eight 16-bit words of a valid IPv6 address, whatever its spelling (`::`, a dotted tail, a zone). */
function ipv6Words(ip: string): number[] {
  let text = ip.replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const words = (part: string | undefined) => (part ? part.split(':').map((w) => parseInt(w, 16)) : []);
  const left = words(head);
  const right = words(tail);
  return tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** The IPv4 address a NAT64 translator dials for an address of its well-known prefix (64:ff9b::/96), or null. */
function nat64Ipv4(ip: string): string | null {
  const w = ipv6Words(ip);
  const nat64 = w[0] === 0x64 && w[1] === 0xff9b && w[2] === 0 && w[3] === 0 && w[4] === 0 && w[5] === 0;
  return nat64 ? `${w[6] >> 8}.${w[6] & 0xff}.${w[7] >> 8}.${w[7] & 0xff}` : null;
}

/**
 * True for addresses a guarded connection must not reach by default. IPv4-mapped addresses
 * (::ffff:0:0/96, how a dual-stack socket dials IPv4) are judged by their IPv4 address, in any
 * spelling, by BlockList itself (Node documents it); NAT64 ones (64:ff9b::/96, what DNS64 answers
 * on an IPv6-only network) by the IPv4 address the translator dials. The other forms that carry
 * one (IPv4-compatible, IPv4-translated, 6to4, Teredo, NAT64 local-use) are refused whole.
 */
export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return privateRanges.check(ip, 'ipv4');
  if (family !== 6) return true; // not an address at all: refuse
  const translated = nat64Ipv4(ip);
  return translated === null ? privateRanges.check(ip, 'ipv6') : privateRanges.check(translated, 'ipv4');
}

export interface SsrfPolicy {
  allowPrivate: boolean;
  allowList: string[];
  /** The settings that lift the rule, named in refusals (`webhooks.allowPrivate or webhooks.allowList`). */
  settings: string;
}

/** Whether a host (name) or an address it resolved to is exempt through the allow list. */
function allowListed(policy: SsrfPolicy, host: string, ip?: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const entry of policy.allowList) {
    const e = entry.toLowerCase();
    if (e === h || (ip && e === ip)) return true;
    const cidr = /^(.+)\/(\d{1,3})$/.exec(e);
    if (cidr && ip && isIP(cidr[1]) && isIP(cidr[1]) === isIP(ip)) {
      const list = new BlockList();
      const type = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
      list.addSubnet(cidr[1], Number(cidr[2]), type);
      if (list.check(ip, type)) return true;
    }
  }
  return false;
}

/** True when the policy lets a connection to `ip` be made for `host`. */
export function addressAllowed(policy: SsrfPolicy, host: string, ip: string): boolean {
  return policy.allowPrivate || !isPrivateAddress(ip) || allowListed(policy, host, ip);
}

const isLocalhostName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/** The addresses a host name resolves to through the injected resolver (A and AAAA). */
async function resolveHost(dns: DnsResolver, host: string): Promise<string[]> {
  const h = host.replace(/^\[|\]$/g, '');
  if (isIP(h)) return [h];
  if (isLocalhostName(h.toLowerCase())) return ['127.0.0.1', '::1'];
  const [v4, v6] = await Promise.allSettled([dns.resolve4(h), dns.resolve6(h)]);
  return [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
}

/** Thrown at connect time when every address of the host is refused. */
export class BlockedDestinationError extends Error {
  readonly code = 'EBLOCKEDDEST';
  constructor(host: string, policy: Pick<SsrfPolicy, 'settings'>) {
    super(`refused to connect to ${host}: private or loopback address (set ${policy.settings})`);
  }
}

/** True when `err`, or the error it wraps (fetch wraps connect errors), is a refused destination. */
export function isBlockedDestination(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  return e?.code === 'EBLOCKEDDEST' || e?.cause?.code === 'EBLOCKEDDEST';
}

/** Why a request's destination was refused by the guard (its message, unwrapped), or null when it was not refused. */
export function refusedReason(err: unknown): string | null {
  if (!isBlockedDestination(err)) return null;
  const e = err as { code?: string; message: string; cause?: { message: string } };
  return e.code === 'EBLOCKEDDEST' ? e.message : (e.cause?.message ?? e.message);
}

/** The refusal for a URL whose host is an IP address the policy refuses (lookup() never sees those), or null. */
export function literalAddressProblem(policy: SsrfPolicy, url: URL): BlockedDestinationError | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) && !addressAllowed(policy, host, host) ? new BlockedDestinationError(host, policy) : null;
}

/**
 * Why a URL cannot be a destination, or null when it can. Names that do not resolve are accepted
 * (DNS may be published later); the connect-time check still applies.
 */
export async function urlProblem(policy: SsrfPolicy, dns: DnsResolver, url: URL): Promise<string | null> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'url must be http or https';
  if (url.username || url.password) return 'url must not carry credentials';
  const host = url.hostname;
  const addresses = await resolveHost(dns, host);
  const refused = addresses.filter((ip) => !addressAllowed(policy, host, ip));
  if (refused.length > 0) {
    return `url resolves to a private or loopback address (${refused[0]}); the operator must allow it with ${policy.settings}`;
  }
  return null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net.connect/tls.connect: resolves through the injected resolver and hands back
 * only allowed addresses, so the socket can never be opened to a refused one.
 */
export function guardedLookup(policy: SsrfPolicy, dns: DnsResolver) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolveHost(dns, hostname).then(
      (addresses) => {
        const wantFamily = typeof options.family === 'number' ? options.family : 0;
        const allowed = addresses
          .filter((ip) => addressAllowed(policy, hostname, ip))
          .filter((ip) => wantFamily === 0 || isIP(ip) === wantFamily);
        if (addresses.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`cannot resolve ${hostname}`);
          err.code = 'ENOTFOUND';
          return callback(err, '');
        }
        if (allowed.length === 0) return callback(new BlockedDestinationError(hostname, policy), '');
        if (options.all)
          return callback(
            null,
            allowed.map((address) => ({ address, family: isIP(address) })),
          );
        callback(null, allowed[0], isIP(allowed[0]));
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}
