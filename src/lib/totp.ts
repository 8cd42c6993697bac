// Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP), as every authenticator app makes
// them: HMAC-SHA1 of the 30-second step, six digits. The secret travels to the app in base32
// (RFC 4648) inside an otpauth:// URI, the form Google Authenticator's key-URI format set and
// every other app reads.
import { createHmac, timingSafeEqual } from 'node:crypto';

const TOTP_PERIOD_S = 30;
const TOTP_DIGITS = 6;
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** The step a moment falls in. */
export const stepAt = (ms: number): number => Math.floor(ms / 1000 / TOTP_PERIOD_S);

/** The code of one step (RFC 4226 section 5.3: dynamic truncation of HMAC-SHA1 of the counter). */
export function codeAt(secret: Buffer, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', secret).update(counter).digest();
  const offset = mac[mac.length - 1] & 0xf;
  const n = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(n % 10 ** TOTP_DIGITS).padStart(TOTP_DIGITS, '0');
}

/**
 * The step whose code this is, looking one step either side of now (RFC 6238 section 5.2: a
 * phone's clock drifts and a code typed near the end of its step arrives in the next), or null.
 */
export function matchingStep(secret: Buffer, code: string, nowMs: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const now = stepAt(nowMs);
  for (const step of [now, now - 1, now + 1]) {
    if (timingSafeEqual(Buffer.from(codeAt(secret, step)), Buffer.from(code))) return step;
  }
  return null;
}

/** The key URI an authenticator app scans or opens: `otpauth://totp/Issuer:account?secret=…`. */
export function keyUri(secret: Buffer, account: string, issuer: string): string {
  const label = encodeURIComponent(`${issuer}:${account}`);
  const params = new URLSearchParams({
    secret: base32(secret),
    issuer,
    algorithm: 'SHA1',
    digits: String(TOTP_DIGITS),
    period: String(TOTP_PERIOD_S),
  });
  return `otpauth://totp/${label}?${params.toString()}`;
}
