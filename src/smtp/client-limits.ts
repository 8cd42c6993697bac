// Per-address limits on new SMTP connections, so one client cannot hold every slot of
// `smtp.maxClients` (a thousand connections kept alive with NOOP locked everyone else out): at most
// `smtp.maxConnectionsPerAddress` open at once (Postfix's anvil, smtpd_client_connection_count_limit,
// default 50) and `smtp.connectionRatePerAddress` new ones (a token bucket: a burst of N, then N per
// period; Postfix's smtpd_client_connection_rate_limit). IPv6 clients are counted per /64, the
// smallest network one is handed. Addresses in `smtp.limitExceptions` (loopback by default, as
// Postfix exempts $mynetworks) are not limited. Limits are per node, in memory.
import { BlockList, isIPv6 } from 'node:net';
import type { Rate } from '../cluster/index.js';

export type Admission = { ok: true; release(): void } | { ok: false; reason: 'too-many-connections' | 'connection-rate'; key: string };

export interface ClientLimits {
  /** A new connection from `ip`: admitted (call release() once it ends) or refused. */
  admit(ip: string): Admission;
}

export interface ClientLimitsOptions {
  /** Open connections per address; 0 = unlimited. */
  maxConnections: number;
  /** New connections per address and period; null or a count of 0 = unlimited. */
  rate: Rate | null;
  /** Addresses and CIDR ranges that are not limited. */
  exceptions: string[];
  /** Milliseconds, from the injected clock. */
  now(): number;
}

/** Entries kept before the idle ones (nothing open, bucket full) are swept. */
const SWEEP_AT = 10_000;

/** The eight 16-bit groups of an IPv6 address, as hex strings. */
function ipv6Groups(ip: string): string[] {
  let text = ip
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '');
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    text = text.slice(0, v4.index) + ((a << 8) | b).toString(16) + ':' + ((c << 8) | d).toString(16);
  }
  const [head, tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((g) => g.replace(/^0+(?=.)/, ''));
}

/** Whom an address counts against: the address itself (IPv4), its /64 (IPv6). */
export function clientKey(ip: string): string {
  return isIPv6(ip) ? `${ipv6Groups(ip).slice(0, 4).join(':')}::/64` : ip;
}

function exceptionList(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/');
    const type = isIPv6(address) ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}

export function createClientLimits(opts: ClientLimitsOptions): ClientLimits {
  const exempt = exceptionList(opts.exceptions);
  const rate = opts.rate && opts.rate.count > 0 ? opts.rate : null;
  const clients = new Map<string, { open: number; tokens: number; at: number }>();
  const unlimited: Admission = { ok: true, release: () => {} };

  const refill = (c: { tokens: number; at: number }, now: number) => {
    if (!rate) return;
    c.tokens = Math.min(rate.count, c.tokens + ((now - c.at) * rate.count) / rate.perMs);
    c.at = now;
  };
  const sweep = (now: number) => {
    for (const [key, c] of clients) {
      refill(c, now);
      if (c.open === 0 && (!rate || c.tokens >= rate.count)) clients.delete(key);
    }
  };

  return {
    admit(ip) {
      if ((!opts.maxConnections && !rate) || exempt.check(ip, isIPv6(ip) ? 'ipv6' : 'ipv4')) return unlimited;
      const key = clientKey(ip);
      const now = opts.now();
      if (clients.size >= SWEEP_AT) sweep(now);
      let c = clients.get(key);
      if (!c) {
        c = { open: 0, tokens: rate?.count ?? 0, at: now };
        clients.set(key, c);
      }
      refill(c, now);
      if (opts.maxConnections && c.open >= opts.maxConnections) return { ok: false, reason: 'too-many-connections', key };
      if (rate && c.tokens < 1) return { ok: false, reason: 'connection-rate', key };
      if (rate) c.tokens -= 1;
      c.open++;
      const entry = c;
      let released = false;
      return {
        ok: true,
        release() {
          if (released) return;
          released = true;
          entry.open--;
        },
      };
    },
  };
}
