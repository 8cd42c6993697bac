// Public ids are a prefix and 22 base62 characters (about 131 random bits); internal ids are
// UUIDv7 so that rows inserted later sort later, which keeps B-tree inserts at the right edge.
import { randomBytes, randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` characters of uniformly random base62, by rejection sampling of random bytes. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = randomBytes(length * 2);
    for (const b of bytes) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Big-endian base62 of a byte string (used for API key secrets). */
export function bytesToBase62(bytes: Uint8Array): string {
  let n = BigInt('0x' + Buffer.from(bytes).toString('hex'));
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out || '0';
}

function uuidv7(nowMs: number = Date.now()): string {
  const b = new Uint8Array(16);
  randomFillSync(b);
  let ms = BigInt(nowMs);
  for (let i = 5; i >= 0; i--) {
    b[i] = Number(ms & 0xffn);
    ms >>= 8n;
  }
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Buffer.from(b).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export interface Ids {
  /** A new internal id (UUIDv7). */
  uuid(): string;
  /** A new public id such as `msg_…`. */
  publicId(prefix: string): string;
}

export function createIds(now: () => number = Date.now): Ids {
  return {
    uuid: () => uuidv7(now()),
    publicId: (prefix) => `${prefix}_${randomBase62(22)}`,
  };
}
