// Domain-name rules shared by claims, routing and forward-loop checks. Names are compared lowercase
// without a trailing dot; a claimable name is 4–253 characters of LDH labels with an alphabetic TLD.

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function normalizeDomain(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}

/** True for a syntactically real, public-looking domain name (at least two labels, alphabetic TLD). */
export function isDomainName(name: string): boolean {
  if (name.length < 4 || name.length > 253) return false;
  const labels = name.split('.');
  if (labels.length < 2) return false;
  if (!labels.every((l) => LABEL.test(l))) return false;
  const tld = labels[labels.length - 1];
  return /^[a-z]{2,63}$/.test(tld) || /^xn--[a-z0-9-]+$/.test(tld);
}

/** The parent of every shared receiving domain: in.{sharedInboundDomain}. */
export function sharedParentOf(sharedInboundDomain: string): string {
  return `in.${normalizeDomain(sharedInboundDomain)}`;
}

/** The workspace's shared receiving domain: {slug}.in.{sharedInboundDomain}, as the interface names it. */
export function sharedDomainOf(slug: string, sharedInboundDomain: string): string {
  return `${slug}.${sharedParentOf(sharedInboundDomain)}`;
}

/** The workspace slug when `domain` has the form of a shared receiving domain, else null. */
export function slugOfSharedDomain(domain: string, sharedInboundDomain: string): string | null {
  const suffix = '.' + sharedParentOf(sharedInboundDomain);
  if (!domain.endsWith(suffix)) return null;
  const slug = domain.slice(0, -suffix.length);
  return LABEL.test(slug) ? slug : null;
}

/** The bounce domain: config `bounceDomain`, or `bounces.` + hostname when empty. */
export function bounceDomainOf(config: { bounceDomain: string; hostname: string }): string {
  return normalizeDomain(config.bounceDomain || `bounces.${config.hostname}`);
}

/**
 * A custom sending domain's own return path: the envelope sender's domain once its records are
 * confirmed (domains.ts). The label is fixed, as the shared bounce domain's default is, so every
 * domain's records read the same and nothing else can claim the name.
 */
export const returnPathOf = (domain: string): string => `bounces.${normalizeDomain(domain)}`;

/** The SPF record that authorises the box: its public addresses when configured, else `a:<hostname>`. */
export function boxSpfRecord(hostname: string, publicIps: readonly string[]): string {
  return publicIps.length
    ? `v=spf1 ${publicIps.map((ip) => (ip.includes(':') ? `ip6:${ip}` : `ip4:${ip}`)).join(' ')} -all`
    : `v=spf1 a:${normalizeDomain(hostname)} -all`;
}
