// SPF as `postern doctor` judges it. Whether an address is authorised is mailauth's SPF evaluator
// (the one inbound verification uses), asked once per public address through our resolver. What
// mailauth does not report is how many lookups the whole record costs whatever the address, so the
// count is a static walk of the record: every include, a, mx, ptr, exists and redirect term counts
// one (RFC 7208 §4.6.4), and includes and redirects are followed into the records they name.
import type MailauthSpf from 'mailauth/lib/spf/index.js';
import { lazyRequire } from '../lib/lazy.js';
import { isNoData, type DnsResolver } from '../lib/dns.js';

const mailauthSpf = lazyRequire<typeof MailauthSpf>('mailauth/lib/spf/index.js');

/** RFC 7208 §4.6.4: more DNS-querying terms than this is a permanent error at the receiver. */
export const SPF_LOOKUP_LIMIT = 10;

// Deep enough to see past the limit; the walk stops there so a loop or a huge tree stays cheap.
const WALK_CEILING = 40;

const isSpf = (txt: string) => /^v=spf1(\s|$)/i.test(txt.trim());

/** The `v=spf1` TXT records at `name` (none: []); a failed lookup other than "no such record" throws. */
export async function spfRecordsAt(dns: DnsResolver, name: string): Promise<string[]> {
  try {
    return (await dns.resolveTxt(name)).map((chunks) => chunks.join('')).filter(isSpf);
  } catch (err) {
    if (isNoData(err)) return [];
    throw err;
  }
}

interface Term {
  mechanism: string;
  /** The target of include:, a:, redirect= and the like; '' when the term names none. */
  target: string;
}

function termsOf(record: string): Term[] {
  return record
    .trim()
    .split(/\s+/)
    .slice(1)
    .map((raw) => {
      const m = /^[+\-~?]?([a-z0-9]+)(?:[:=]([^/]*))?/i.exec(raw);
      return { mechanism: (m?.[1] ?? raw).toLowerCase(), target: m?.[2] ?? '' };
    });
}

const COUNTED = new Set(['include', 'a', 'mx', 'ptr', 'exists', 'redirect']);

export interface LookupCount {
  count: number;
  /** Includes or redirects that could not be followed (no record, several records, a macro). */
  notes: string[];
}

/** The DNS lookups `record` costs, following includes and redirects. */
export async function countSpfLookups(dns: DnsResolver, record: string): Promise<LookupCount> {
  const notes: string[] = [];
  let count = 0;
  const walk = async (rec: string, seen: Set<string>): Promise<void> => {
    for (const term of termsOf(rec)) {
      if (!COUNTED.has(term.mechanism)) continue;
      count++;
      if (count > WALK_CEILING) return;
      if (term.mechanism !== 'include' && term.mechanism !== 'redirect') continue;
      const target = term.target.toLowerCase();
      if (target === '' || target.includes('%{')) {
        notes.push(`${term.mechanism}:${term.target} cannot be followed here (macro)`);
        continue;
      }
      if (seen.has(target)) {
        notes.push(`${term.mechanism}:${target} loops`);
        continue;
      }
      const found = await spfRecordsAt(dns, target).catch(() => null);
      if (found === null) notes.push(`${target}: lookup failed`);
      else if (found.length !== 1) notes.push(`${target} publishes ${found.length} SPF records`);
      else await walk(found[0], new Set([...seen, target]));
    }
  };
  await walk(record, new Set());
  return { count, notes };
}

/** mailauth's verdict for mail from `domain` sent by `ip`: pass, fail, softfail, neutral, none, permerror, temperror. */
export async function spfVerdict(dns: DnsResolver, domain: string, ip: string, hostname: string): Promise<string> {
  const result = await mailauthSpf().spf({
    ip,
    sender: `postmaster@${domain}`,
    helo: hostname,
    mta: hostname,
    resolver: (name: string, rrtype: string) => dns.resolve(name, rrtype),
  });
  return result.status.result;
}

/** The record with `ip4:`/`ip6:` terms for `missing` put in before its `all` or redirect (or at the end). */
export function withAddresses(record: string, missing: string[]): string {
  const terms = record.trim().split(/\s+/);
  const add = missing.map((ip) => (ip.includes(':') ? `ip6:${ip}` : `ip4:${ip}`));
  const at = terms.findIndex((t, i) => i > 0 && /^([+\-~?]?all|redirect=)/i.test(t));
  if (at === -1) return [...terms, ...add].join(' ');
  return [...terms.slice(0, at), ...add, ...terms.slice(at)].join(' ');
}
