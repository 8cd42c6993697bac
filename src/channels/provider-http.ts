// One HTTP exchange with a provider, and the classification every HTTP provider shares: 429 and
// 5xx (and network failures) are temporary, so the dispatcher retries them with backoff; other
// 4xx are permanent. Error strings carry status and provider error codes, never request headers.
//
// Every request goes through the SSRF guard (lib/ssrf.ts): a provider's base URL and a web-push
// subscription's endpoint are chosen by a workspace, so by default they may not reach private,
// loopback or link-local addresses, checked on the address actually dialled. `channels.allowPrivate`
// and `channels.allowList` let a gateway on the local network through. A refused destination is a
// permanent failure (`refusedReason`): no retry would reach it.
import { rootCertificates } from 'node:tls';
import type * as Undici from 'undici';
import { lazyRequire } from '../lib/lazy.js';
import type { Config } from '../config.js';
import type { Clock } from '../lib/clock.js';
import type { DnsResolver } from '../lib/dns.js';
import { guardedLookup, literalAddressProblem, type SsrfPolicy } from '../lib/ssrf.js';

const undici = lazyRequire<typeof Undici>('undici');

/** A provider's JSON answer: whatever it sent, read field by field with textField(). */
export type ProviderJson = { readonly [field: string]: unknown } | undefined;

export interface ProviderResponse {
  status: number;
  headers: Headers;
  text: string;
  json: ProviderJson;
}

/** A string field of a provider's answer, or null when it is absent or not a string. */
export function textField(json: ProviderJson, field: string): string | null {
  const v = json?.[field];
  return typeof v === 'string' ? v : null;
}

/** The channels' SSRF policy (`channels.allowPrivate`, `channels.allowList`). */
export function channelSsrfPolicy(channels: Config['channels']): SsrfPolicy {
  return { allowPrivate: channels.allowPrivate, allowList: channels.allowList, settings: 'channels.allowPrivate or channels.allowList' };
}

/** The trusted certificate authorities: the system's, plus a connection's own (a private gateway). */
export const trustedCas = (ca: string | undefined): string[] | undefined => (ca ? [...rootCertificates, ca] : undefined);

/** The HTTP client of one provider connection. */
export interface ProviderHttp {
  /** POSTs and reads the whole answer; throws on network failure, timeout or a refused destination. */
  post(url: string, init: { headers: Record<string, string>; body: string | Uint8Array; timeoutMs: number }): Promise<ProviderResponse>;
  close(): Promise<void>;
}

/** A client whose connections pass the SSRF guard and trust `ca` besides the system's CAs. */
export function providerHttp(deps: { dns: DnsResolver; ssrf: SsrfPolicy }, opts: { ca?: string } = {}): ProviderHttp {
  const ca = trustedCas(opts.ca);
  // Made at the first request: a daemon with no HTTP provider never loads undici (lib/lazy.ts).
  let agent: Undici.Agent | null = null;
  const dispatcher = () =>
    (agent ??= new (undici().Agent)({ connect: { lookup: guardedLookup(deps.ssrf, deps.dns), ...(ca ? { ca } : {}) } }));
  return {
    async post(url, init) {
      // An IP address never goes through lookup(): the guard is applied to it here.
      const refused = literalAddressProblem(deps.ssrf, new URL(url));
      if (refused) throw refused;
      const res = await undici().fetch(url, {
        method: 'POST',
        headers: init.headers,
        body: init.body,
        signal: AbortSignal.timeout(init.timeoutMs),
        redirect: 'manual',
        dispatcher: dispatcher(),
      });
      const body = await res.text();
      let json: ProviderJson = undefined;
      try {
        const parsed: unknown = body ? JSON.parse(body) : undefined;
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) json = parsed as ProviderJson;
      } catch {
        // not JSON
      }
      return { status: res.status, headers: new Headers([...res.headers]), text: body, json };
    },
    close: async () => {
      await agent?.close();
    },
  };
}

export { refusedReason } from '../lib/ssrf.js';

export function isTemporary(status: number): boolean {
  return status === 429 || status >= 500;
}

/** When to try again according to a Retry-After header (seconds or an HTTP date), if it says. */
export function retryAfter(headers: Headers | Record<string, unknown>, clock: Clock): Date | undefined {
  const raw = headers instanceof Headers ? headers.get('retry-after') : headers['retry-after'];
  if (typeof raw !== 'string' || raw === '') return undefined;
  if (/^\d+$/.test(raw)) return new Date(clock.now().getTime() + Number(raw) * 1000);
  const d = new Date(raw);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** A network error as a short reason (code and message, no URL credentials). */
export function networkReason(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'timed out';
  const code = e?.cause?.code ?? e?.code;
  return code ? `network error ${code}` : `network error: ${e?.cause?.message ?? e?.message ?? 'unknown'}`;
}
