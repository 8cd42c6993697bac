// Which local address a direct delivery leaves from (docs/deliverability.md, "Source addresses and
// pools"). `delivery.sources` names local addresses with their EHLO names; `delivery.pools` groups
// them; `delivery.poolAssignment` gives a sending domain, else a workspace, else everyone a pool.
// Mail of a workspace or domain without a pool leaves from whatever address the system picks, with
// `hostname` in EHLO, as before sources existed.
//
// Within a pool, a destination always gets the same source of each address family: the source is
// picked by a hash of the recipient domain among the pool's sources of the family of the MX
// address being tried. Receivers judge reputation per sending address, so one destination sees one
// address, not a rotation of them; and a connection of that source to the host is reused.
// `delivery.addressFamily` limits a destination to IPv4 or IPv6 (Gmail holds mail over IPv6 to
// stricter rules): a pattern matches the recipient domain or the MX host name (`gmail.com`,
// `*.google.com`).
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { Config } from '../../config.js';

export interface Source {
  /** Its name in delivery.sources. */
  name: string;
  address: string;
  /** The name it gives in EHLO. */
  ehlo: string;
  family: 4 | 6;
}

export type Family = 'ipv4' | 'ipv6';

export interface SourcePicker {
  /** The pool of a message: its sending domain's, else its workspace's, else the default; null for none. */
  poolOf(workspace: { id: string; slug?: string | null }, sendingDomain: string | null): string | null;
  /** The family `domain` (or its MX host) is limited to, or null for either. */
  familyFor(domain: string, mxHost: string): Family | null;
  /** The source of `pool` for a recipient domain and an MX address, or null when the pool has none of that family. */
  pick(pool: string, recipientDomain: string, mxAddress: string): Source | null;
  /** Every configured source (the doctor checks each). */
  all(): Source[];
}

/** True when `pattern` (`example.com` or `*.example.com`) matches `name`. */
function patternMatches(pattern: string, name: string): boolean {
  const p = pattern.toLowerCase().replace(/\.$/, '');
  const n = name.toLowerCase().replace(/\.$/, '');
  if (p.startsWith('*.')) return n.endsWith(p.slice(1));
  return n === p;
}

/** A stable index in [0, n) for a domain: the same domain always gets the same member. */
export function hashIndex(key: string, n: number): number {
  return createHash('sha256').update(key.toLowerCase()).digest().readUInt32BE(0) % n;
}

export function createSourcePicker(
  delivery: Pick<Config['delivery'], 'sources' | 'pools' | 'poolAssignment' | 'addressFamily'>,
): SourcePicker {
  const sources = new Map<string, Source>();
  for (const [name, s] of Object.entries(delivery.sources))
    sources.set(name, { name, address: s.address, ehlo: s.ehlo.toLowerCase(), family: isIP(s.address) === 6 ? 6 : 4 });
  const pools = new Map<string, { 4: Source[]; 6: Source[] }>();
  for (const [pool, names] of Object.entries(delivery.pools)) {
    const members = names.map((n) => sources.get(n)).filter((s): s is Source => !!s);
    pools.set(pool, { 4: members.filter((s) => s.family === 4), 6: members.filter((s) => s.family === 6) });
  }
  const byDomain = new Map(Object.entries(delivery.poolAssignment.domains).map(([d, p]) => [d.toLowerCase(), p]));
  const families = Object.entries(delivery.addressFamily);
  return {
    poolOf(workspace, sendingDomain) {
      const p =
        (sendingDomain ? byDomain.get(sendingDomain.toLowerCase()) : undefined) ??
        delivery.poolAssignment.workspaces[workspace.id] ??
        (workspace.slug ? delivery.poolAssignment.workspaces[workspace.slug] : undefined) ??
        delivery.poolAssignment.default;
      return p && pools.has(p) ? p : null;
    },
    familyFor(domain, mxHost) {
      for (const [pattern, family] of families) if (patternMatches(pattern, domain) || patternMatches(pattern, mxHost)) return family;
      return null;
    },
    pick(pool, recipientDomain, mxAddress) {
      const members = pools.get(pool)?.[isIP(mxAddress) === 6 ? 6 : 4] ?? [];
      if (members.length === 0) return null;
      return members[hashIndex(recipientDomain, members.length)];
    },
    all: () => [...sources.values()],
  };
}
