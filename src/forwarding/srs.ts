// Sender Rewriting Scheme (SRS0, as in postsrsd): a forwarded message's envelope sender becomes an
// address on our bounce domain, so the receiver's SPF check is against Postern's IP and passes,
// while the original sender stays recoverable. SRS0=<hash>=<tt>=<domain>=<local>@<srs domain>:
// tt is a day stamp (base32, mod 1024) and hash the first 4 base64 characters of
// HMAC-SHA1(secret, tt + domain + local), lowercased input, so it cannot be forged.
import { createHmac } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** How long an SRS address is honoured, in days (postsrsd's default). */
export const SRS_MAX_AGE_DAYS = 21;

function timestamp(now: Date): string {
  const days = Math.floor(now.getTime() / 86_400_000) % 1024;
  return BASE32[days >> 5] + BASE32[days & 31];
}

/** Days since the stamp `tt` was made, `now` being later (stamps wrap every 1024 days). */
function ageInDays(tt: string, now: Date): number {
  const stamp = BASE32.indexOf(tt[0].toUpperCase()) * 32 + BASE32.indexOf(tt[1].toUpperCase());
  return (((Math.floor(now.getTime() / 86_400_000) - stamp) % 1024) + 1024) % 1024;
}

function hash(secret: string, ...parts: string[]): string {
  return createHmac('sha1', secret).update(parts.join('').toLowerCase()).digest('base64').slice(0, 4);
}

/** The SRS0 envelope sender for `from`; the null sender (bounces) stays null. */
export function srsForward(secret: string, from: string, srsDomain: string, now: Date): string {
  const at = from.lastIndexOf('@');
  // The null sender (a bounce), and anything without a local part, is kept as it is.
  if (at < 1) return from;
  const local = from.slice(0, at);
  const domain = from.slice(at + 1);
  // Already rewritten by another forwarder: SRS1 chaining is not needed for one hop; keep it short.
  if (/^SRS[01][=+-]/i.test(local) && domain.toLowerCase() === srsDomain.toLowerCase()) return from;
  const tt = timestamp(now);
  return `SRS0=${hash(secret, tt, domain, local)}=${tt}=${domain}=${local}@${srsDomain}`;
}

/**
 * The original sender of an SRS0 address made with `secret`, or null when it is not one of ours;
 * given `now`, also null when it is older than SRS_MAX_AGE_DAYS (a replayed address).
 */
export function srsReverse(secret: string, address: string, now?: Date): string | null {
  const m = /^SRS0=([^=]{4})=([A-Z2-7]{2})=([^=]+)=(.+)@[^@]+$/i.exec(address);
  if (!m) return null;
  const [, h, tt, domain, local] = m;
  // Compared without case, as libsrs2 and postsrsd do: some MTAs lowercase the address a bounce
  // is sent to, and the hash is base64.
  if (hash(secret, tt, domain, local).toLowerCase() !== h.toLowerCase()) return null;
  if (now && ageInDays(tt, now) > SRS_MAX_AGE_DAYS) return null;
  return `${local}@${domain}`;
}
