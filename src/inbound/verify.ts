// SPF, DKIM, DMARC and ARC through mailauth with the daemon's resolver. The verdicts are stored per
// message as {spf, dkim, dmarc, arc}, each {result, details}; mailauth's Authentication-Results
// (and Received-SPF) header lines are prepended to the stored raw source. BIMI is not evaluated.
import { authenticate } from 'mailauth';
import type { DnsResolver } from '../lib/dns.js';

export interface Verdict {
  result: string;
  details: string;
  [key: string]: unknown;
}

export interface Verdicts {
  spf: Verdict;
  dkim: Verdict & { signatures: { domain: string; selector: string; result: string }[] };
  dmarc: Verdict & { policy: string | null };
  arc: Verdict;
}

export interface VerifyInput {
  raw: Buffer;
  ip: string;
  helo: string;
  mailFrom: string;
  mta: string;
}

// mailauth has no types of its own; these are the parts we read.
interface AuthOutput {
  dkim?: { results?: { signingDomain?: string; selector?: string; status?: { result?: string }; info?: string }[] };
  spf?: { status?: { result?: string }; info?: string } | false;
  dmarc?: { status?: { result?: string }; policy?: string; info?: string } | false;
  arc?: { status?: { result?: string }; info?: string } | false;
  headers: string;
}

export type Lookup = (name: string, rrtype: string) => Promise<unknown>;

/**
 * A small positive/negative cache in front of the resolver for mailauth's lookups (SPF, DKIM keys,
 * DMARC policies of the same senders recur constantly; node's resolver caches nothing). Entries
 * live `ttlMs`; failures other than "no such name/data" are not cached.
 */
export function cachedLookup(dns: DnsResolver, ttlMs = 30_000, max = 5_000): Lookup {
  const cache = new Map<string, { at: number; value: Promise<unknown> }>();
  return (name, rrtype) => {
    const key = `${rrtype}:${name.toLowerCase()}`;
    const now = performance.now();
    const hit = cache.get(key);
    if (hit && now - hit.at < ttlMs) return hit.value;
    const value = dns.resolve(name, rrtype);
    if (cache.size >= max) cache.clear();
    cache.set(key, { at: now, value });
    value.catch((err: { code?: string }) => {
      if (err?.code !== 'ENOTFOUND' && err?.code !== 'ENODATA') cache.delete(key);
    });
    return value;
  };
}

export async function verifyMessage(dns: DnsResolver | Lookup, input: VerifyInput): Promise<{ verdicts: Verdicts; headers: string }> {
  const resolver: Lookup = typeof dns === 'function' ? dns : (name, rrtype) => dns.resolve(name, rrtype);
  const out = (await authenticate(input.raw, {
    ip: input.ip,
    helo: input.helo || input.ip,
    sender: input.mailFrom,
    mta: input.mta,
    resolver,
    disableBimi: true,
  } as never)) as AuthOutput;
  const sigs = (out.dkim?.results ?? []).map((r) => ({
    domain: r.signingDomain ?? '',
    selector: r.selector ?? '',
    result: r.status?.result ?? 'none',
    details: r.info ?? '',
  }));
  const signed = sigs.filter((s) => s.domain !== '');
  const dkimResult = signed.length === 0 ? 'none' : signed.some((s) => s.result === 'pass') ? 'pass' : signed[0].result;
  const spf = out.spf || undefined;
  const dmarc = out.dmarc || undefined;
  const arc = out.arc || undefined;
  const verdicts: Verdicts = {
    spf: { result: spf?.status?.result ?? 'none', details: spf?.info ?? '' },
    dkim: {
      result: dkimResult,
      details: sigs.map((s) => s.details).join('; '),
      signatures: signed.map(({ domain, selector, result }) => ({ domain, selector, result })),
    },
    dmarc: { result: dmarc?.status?.result ?? 'none', policy: dmarc?.policy ?? null, details: dmarc?.info ?? '' },
    arc: { result: arc?.status?.result ?? 'none', details: arc?.info ?? '' },
  };
  return { verdicts, headers: out.headers };
}
