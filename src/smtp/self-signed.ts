// A self-signed certificate for STARTTLS when the operator configured none, generated once into the
// data dir. Senders on the public internet accept any certificate for opportunistic STARTTLS, so
// this buys encryption in transit without a CA. node:crypto makes and signs the key; the X.509
// structure is small enough to encode here in DER, which keeps this working offline with no package.
import { createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { privateDirectory } from '../lib/private-dir.js';

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  while (n > 0) {
    bytes.unshift(n & 0xff);
    n >>= 8;
  }
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, body: Buffer) => Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]) => tlv(0x31, Buffer.concat(parts));
const explicit = (n: number, body: Buffer) => tlv(0xa0 + n, body);
// DER integers are minimal: no redundant leading zero byte, and a zero prepended when the top bit is set.
function int(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0 && b[i + 1] < 0x80) i++;
  const v = b.subarray(i);
  return tlv(0x02, v[0] & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}
const nul = () => Buffer.from([0x05, 0x00]);
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));

function oid(dotted: string): Buffer {
  const p = dotted.split('.').map(Number);
  const out = [40 * p[0] + p[1]];
  for (const v of p.slice(2)) {
    const enc = [v & 0x7f];
    for (let x = v >> 7; x > 0; x >>= 7) enc.unshift((x & 0x7f) | 0x80);
    out.push(...enc);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'; // YYYYMMDDHHMMSSZ
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

// A subjectAltName entry: an IPv4 address as iPAddress, anything else as dNSName.
function altName(name: string): Buffer {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  return v4 ? tlv(0x87, Buffer.from(v4.slice(1).map(Number))) : tlv(0x82, Buffer.from(name));
}

/** A PEM certificate and key for `hostname` (and `altNames`), valid from `now` for ten years. */
export function makeSelfSigned(hostname: string, now: Date, altNames: string[] = []): { cert: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const sha256WithRsa = seq(oid('1.2.840.113549.1.1.11'), nul());
  const name = seq(set(seq(oid('2.5.4.3'), utf8(hostname))));
  const notAfter = new Date(now.getTime() + 10 * 365 * 24 * 3600 * 1000);
  const san = seq(oid('2.5.29.17'), octets(seq(...[hostname, ...altNames].map(altName))));
  const tbs = seq(
    explicit(0, int(Buffer.from([2]))),
    int(randomBytes(16)),
    sha256WithRsa,
    name,
    seq(time(new Date(now.getTime() - 3600_000)), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(san)),
  );
  const signature = createSign('sha256').update(tbs).sign(privateKey);
  const der = seq(tbs, sha256WithRsa, bits(signature));
  const pem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  return { cert: pem, key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/** The configured certificate and key, or the self-signed pair in `{dataDir}/tls/`, made on first use. */
export function loadTls(opts: { dataDir: string; hostname: string; certFile: string; keyFile: string; now: Date }): {
  cert: Buffer;
  key: Buffer;
} {
  if (opts.certFile && opts.keyFile) return { cert: readFileSync(opts.certFile), key: readFileSync(opts.keyFile) };
  const dir = path.join(opts.dataDir, 'tls');
  const certPath = path.join(dir, 'smtp-cert.pem');
  const keyPath = path.join(dir, 'smtp-key.pem');
  if (!existsSync(certPath) || !existsSync(keyPath)) {
    privateDirectory(dir);
    const { cert, key } = makeSelfSigned(opts.hostname, opts.now);
    writeFileSync(keyPath, key, { mode: 0o600 });
    writeFileSync(certPath, cert, { mode: 0o600 });
  }
  return { cert: readFileSync(certPath), key: readFileSync(keyPath) };
}

/** The certificate the listener presents, without making one: the configured file, else the generated one if it exists. */
export function currentCertificate(opts: {
  dataDir: string;
  certFile: string;
  keyFile: string;
}): { pem: string; configured: boolean } | null {
  if (opts.certFile && opts.keyFile) return { pem: readFileSync(opts.certFile, 'utf8'), configured: true };
  const certPath = path.join(opts.dataDir, 'tls', 'smtp-cert.pem');
  return existsSync(certPath) ? { pem: readFileSync(certPath, 'utf8'), configured: false } : null;
}
