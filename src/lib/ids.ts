// Public ids are a prefix and 22 base62 characters (about 131 random bits); internal ids are
// UUIDv7 so that rows inserted later sort later, which keeps B-tree inserts at the right edge.
import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes drawn from the CSPRNG a few kilobytes at a time and handed out in order, each byte
// once (as Node's randomUUID does): one call into OpenSSL per ~80 ids instead of two per id. Ids are
// made for every send, event and webhook attempt, so they should cost next to nothing; the accept
// bench measured the pool within its noise, so this is about keeping them cheap, not a speed-up.
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function randomByte(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++];
}

/** `length` characters of uniformly random base62, by rejection sampling of random bytes. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62];
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
  for (let i = 6; i < 16; i++) b[i] = randomByte();
  // The 48-bit millisecond timestamp, big-endian (2^48 ms is past the year 10,000).
  let ms = nowMs;
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256;
    ms = Math.floor(ms / 256);
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
