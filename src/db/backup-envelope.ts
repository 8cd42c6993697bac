// The envelope of an encrypted backup (`postern backup --encrypt`). A backup carries secrets.key
// and every DKIM key, so one that leaves the machine should be sealed with a passphrase the
// operator keeps elsewhere. Only node:crypto is used, and the format is small enough to open with
// any AES-GCM and scrypt implementation (docs/install.md spells it out byte by byte):
//
//   offset  size  field
//        0     8  magic, ASCII "PSTNBKUP"
//        8     1  format version, 1
//        9     1  scrypt cost as log2(N), 17
//       10     4  scrypt r, big-endian, 8
//       14     4  scrypt p, big-endian, 1
//       18    16  salt
//       34    12  AES-GCM nonce
//       46     …  ciphertext: the plain backup (a SQLite file) under AES-256-GCM
//   end-16    16  GCM tag
//
// The key is scrypt(passphrase as UTF-8, salt, 32 bytes, N, r, p); the 46 header bytes are the
// GCM additional data, so a changed parameter fails like a wrong passphrase. The body is streamed:
// a backup may be gigabytes of mail.
import { createCipheriv, createDecipheriv, randomBytes, scrypt, type ScryptOptions } from 'node:crypto';
import { closeSync, createReadStream, createWriteStream, openSync, readSync, statSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';

const MAGIC = Buffer.from('PSTNBKUP', 'ascii');
const VERSION = 1;
const HEADER = 46;
const TAG = 16;
// OWASP's scrypt minimum for interactive use is N=2^17, r=8, p=1: 128 MiB and about half a second,
// paid once per backup or restore.
const LOG_N = 17;
const R = 8;
const P = 1;

/** A wrong passphrase, or a file altered since it was sealed: GCM cannot tell which. */
export class EnvelopeError extends Error {}

function deriveKey(passphrase: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** logN, r, p, maxmem: 256 * 2 ** logN * r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scrypt(Buffer.from(passphrase, 'utf8'), salt, 32, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** Whether `file` starts with the envelope's magic bytes. */
export function isSealedBackup(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(MAGIC.length);
    return readSync(fd, head, 0, head.length, 0) === head.length && head.equals(MAGIC);
  } finally {
    closeSync(fd);
  }
}

/** Seals the plain backup `source` into `dest` (created 0600). */
export async function sealBackup(source: string, dest: string, passphrase: string): Promise<void> {
  const salt = randomBytes(16);
  const nonce = randomBytes(12);
  const header = Buffer.alloc(HEADER);
  MAGIC.copy(header, 0);
  header.writeUInt8(VERSION, 8);
  header.writeUInt8(LOG_N, 9);
  header.writeUInt32BE(R, 10);
  header.writeUInt32BE(P, 14);
  salt.copy(header, 18);
  nonce.copy(header, 34);
  const cipher = createCipheriv('aes-256-gcm', await deriveKey(passphrase, salt, LOG_N, R, P), nonce);
  cipher.setAAD(header);
  const out = createWriteStream(dest, { mode: 0o600 });
  out.write(header);
  await pipeline(createReadStream(source), cipher, out, { end: false });
  await new Promise<void>((resolve, reject) => out.end(cipher.getAuthTag(), () => resolve()).once('error', reject));
}

/**
 * Opens the sealed backup `source` into `dest` (created 0600). Throws EnvelopeError for a wrong
 * passphrase or a damaged file; `dest` then holds unauthenticated bytes the caller must delete.
 */
export async function openBackup(source: string, dest: string, passphrase: string): Promise<void> {
  const size = statSync(source).size;
  const fd = openSync(source, 'r');
  const header = Buffer.alloc(HEADER);
  const tag = Buffer.alloc(TAG);
  try {
    if (size < HEADER + TAG || readSync(fd, header, 0, HEADER, 0) !== HEADER) throw new EnvelopeError(`${source} is cut short`);
    readSync(fd, tag, 0, TAG, size - TAG);
  } finally {
    closeSync(fd);
  }
  if (!header.subarray(0, 8).equals(MAGIC)) throw new EnvelopeError(`${source} is not an encrypted Postern backup`);
  const version = header.readUInt8(8);
  if (version !== VERSION) throw new EnvelopeError(`${source} is an encrypted backup of format ${version}, which this version cannot read`);
  const logN = header.readUInt8(9);
  const r = header.readUInt32BE(10);
  const p = header.readUInt32BE(14);
  // Parameters an attacker could raise to make the restore exhaust memory or time.
  if (logN < 10 || logN > 22 || r < 1 || r > 32 || p < 1 || p > 16) throw new EnvelopeError(`${source} has scrypt parameters out of range`);
  const key = await deriveKey(passphrase, header.subarray(18, 34), logN, r, p);
  const decipher = createDecipheriv('aes-256-gcm', key, header.subarray(34, 46));
  decipher.setAAD(header);
  decipher.setAuthTag(tag);
  try {
    await pipeline(createReadStream(source, { start: HEADER, end: size - TAG - 1 }), decipher, createWriteStream(dest, { mode: 0o600 }));
  } catch (err) {
    if ((err as Error).message.includes('authenticate')) {
      throw new EnvelopeError(`cannot decrypt ${source}: wrong passphrase, or the file was altered`);
    }
    throw err;
  }
}
