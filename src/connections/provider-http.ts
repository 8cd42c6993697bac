// One HTTP exchange with a provider, and the classification every HTTP provider shares: 429 and
// 5xx (and network failures) are temporary, so the dispatcher retries them with backoff; other
// 4xx are permanent. Error strings carry status and provider error codes, never request headers.
import type { Clock } from '../lib/clock.js';

export interface ProviderResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** POSTs and reads the whole answer; throws only on network failure or timeout. */
export async function post(
  url: string,
  init: { headers: Record<string, string>; body: string | Uint8Array; timeoutMs: number },
): Promise<ProviderResponse> {
  const res = await fetch(url, {
    method: 'POST',
    headers: init.headers,
    body: init.body,
    signal: AbortSignal.timeout(init.timeoutMs),
    redirect: 'manual',
  });
  const text = await res.text();
  let json: any = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, text, json };
}

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
