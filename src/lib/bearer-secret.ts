// Secrets Postern hands out once and then keeps only a hash of: API keys (workspaces/keys.ts) and
// SMTP credentials (submission/smtp-credentials.ts). A secret is a prefix naming what it is and
// its environment, then 32 random bytes in base62 (about 190 bits); the stored form is the hex
// SHA-256 of the whole secret. A plain hash is enough because the secret is random and long (no
// dictionary to try), and it lets a lookup find the row by the hash in one indexed query.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { bytesToBase62 } from './ids.js';

/** A new secret: `prefix` then 32 random bytes in base62. */
export function mintSecret(prefix: string): string {
  return `${prefix}${bytesToBase62(randomBytes(32))}`;
}

/** The hash kept at rest in place of a secret (hex SHA-256). */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Whether `secret` hashes to `hash`, compared in constant time. */
export function secretMatches(secret: string, hash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

// A secret's last use is kept to the minute: a use writes it only when the one stored is a minute
// old or more, so a busy key or credential costs at most one write a minute.
const LAST_USE_RESOLUTION_MS = 60_000;

/** Whether a use at `now` (ms) should be written over the stored last use (ISO time, or null). */
export function lastUseDue(lastUsedAt: string | null, now: number): boolean {
  return lastUsedAt === null || Date.parse(lastUsedAt) + LAST_USE_RESOLUTION_MS <= now;
}
