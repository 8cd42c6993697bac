// SPF, DKIM, DMARC and ARC through mailauth with the daemon's resolver. The verdicts are stored per
// message as {spf, dkim, dmarc, arc}, each {result, details}; mailauth's Authentication-Results
// (and Received-SPF) header lines are prepended to the stored raw source. BIMI is not evaluated.
//
// One word differs from mailauth's: a DKIM signature whose body hash does not match the body (the
// body was changed after signing) is `fail`, as RFC 6376 6.3 (PERMFAIL) and rspamd, dkimpy and
// OpenDKIM have it, where mailauth says `neutral`; the verdict and the Authentication-Results line
// say the same. mailauth's other `neutral`s (no key, an unusable key, an expired signature) stay.
// A message mailauth cannot take at all is recorded `permerror`, never refused or retried.
import type * as Mailauth from 'mailauth';
import { lazyRequire } from '../lib/lazy.js';
import { installLineBreaks } from './dkim-line-breaks.js';
import { installPublicKeys } from './dkim-public-keys.js';
import { installRelaxedBody } from './dkim-relaxed-body.js';
import type { DnsResolver } from '../lib/dns.js';
import { NO_SCAN, type SpamVerdict, type VirusVerdict } from './scan.js';

const mailauthLib = lazyRequire<typeof Mailauth>('mailauth');
const mailauth = (): typeof Mailauth => {
  installPublicKeys();
  const lib = mailauthLib();
  installLineBreaks();
  installRelaxedBody();
  return lib;
};

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
  /** Filled by the scanners (scan.ts) when configured; `none` otherwise. */
  spam: SpamVerdict;
  virus: VirusVerdict;
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
  dkim?: {
    results?: { signingDomain?: string; selector?: string; status?: { result?: string; comment?: string | false }; info?: string }[];
  };
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

// `dkim=neutral`, any comments mailauth puts before its reason (an undersized-signature note), then
// the reason.
const BODY_HASH_NEUTRAL = /(^|\r\n )dkim=neutral((?: \((?:[^()\\]|\\.)*\))*? \(body hash did not verify\))/g;
/** mailauth's word for a body hash mismatch, as RFC 6376 and the other verifiers have it. */
const asFail = (text: string) => text.replace(BODY_HASH_NEUTRAL, '$1dkim=fail$2');

const NOT_VERIFIED = (details: string): Verdicts => ({
  spf: { result: 'permerror', details },
  dkim: { result: 'permerror', details, signatures: [] },
  dmarc: { result: 'permerror', policy: null, details },
  arc: { result: 'permerror', details },
  ...NO_SCAN,
});

export async function verifyMessage(dns: DnsResolver | Lookup, input: VerifyInput): Promise<{ verdicts: Verdicts; headers: string }> {
  const resolver: Lookup = typeof dns === 'function' ? dns : (name, rrtype) => dns.resolve(name, rrtype);
  let out: AuthOutput;
  try {
    out = (await mailauth().authenticate(input.raw, {
      ip: input.ip,
      helo: input.helo || input.ip,
      sender: input.mailFrom,
      mta: input.mta,
      resolver,
      disableBimi: true,
    })) as AuthOutput;
  } catch (err) {
    const details = `not verified: ${String((err as Error)?.message ?? err)
      .replace(/[\x00-\x1f\x7f]+/g, ' ')
      .slice(0, 200)}`;
    const comment = details.replace(/[()\\]/g, '');
    return {
      verdicts: NOT_VERIFIED(details),
      headers: `Authentication-Results: ${input.mta};\r\n dkim=permerror (${comment});\r\n spf=permerror;\r\n dmarc=permerror\r\n`,
    };
  }
  const sigs = (out.dkim?.results ?? []).map((r) => {
    const bodyHashMismatch = r.status?.result === 'neutral' && r.status?.comment === 'body hash did not verify';
    return {
      domain: r.signingDomain ?? '',
      selector: r.selector ?? '',
      result: bodyHashMismatch ? 'fail' : (r.status?.result ?? 'none'),
      details: bodyHashMismatch ? asFail(r.info ?? '') : (r.info ?? ''),
    };
  });
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
    ...NO_SCAN,
  };
  return { verdicts, headers: asFail(out.headers) };
}
