// Certificates for TLS peers on loopback. `selfSignedCert` is the daemon's own self-signed maker
// (for 127.0.0.1 and localhost), so the HTTP/2 APNs fake can speak TLS without openssl or a
// certificate library. `makeTestCa` is a private certificate authority that signs server
// certificates for given names, for tests of certificate verification (a relay with a private CA,
// MX hosts with certificates for different names): nothing trusts it unless a test says so.
import { createSign, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { makeSelfSigned } from '../../src/smtp/self-signed.js';

export function selfSignedCert(): { key: string; cert: string } {
  return makeSelfSigned('localhost', new Date(), ['127.0.0.1']);
}

// --- a small DER writer: just what an X.509 v3 certificate needs ------------------------------

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (; n > 0; n >>= 8) bytes.unshift(n & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, body: Buffer) => Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]) => tlv(0x31, Buffer.concat(parts));
const explicit = (n: number, body: Buffer) => tlv(0xa0 + n, body);
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
const bool = (v: boolean) => Buffer.from([0x01, 0x01, v ? 0xff : 0x00]);
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
function int(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0 && b[i + 1] < 0x80) i++;
  const v = b.subarray(i);
  return tlv(0x02, v[0] & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}
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
const time = (d: Date) => tlv(0x17, Buffer.from(d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z'));
const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const extension = (id: string, critical: boolean, value: Buffer) => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
// An IPv4 address as iPAddress, anything else as dNSName.
function altName(n: string): Buffer {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(n);
  return v4 ? tlv(0x87, Buffer.from(v4.slice(1).map(Number))) : tlv(0x82, Buffer.from(n));
}
const pem = (der: Buffer) =>
  `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;

function certificate(opts: { subject: string; issuer: string; publicKey: KeyObject; signer: KeyObject; extensions: Buffer[] }): string {
  const ecdsaWithSha256 = seq(oid('1.2.840.10045.4.3.2'));
  const now = Date.now();
  const tbs = seq(
    explicit(0, int(Buffer.from([2]))),
    int(randomBytes(16)),
    ecdsaWithSha256,
    name(opts.issuer),
    seq(time(new Date(now - 3600_000)), time(new Date(now + 365 * 24 * 3600_000))),
    name(opts.subject),
    opts.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(...opts.extensions)),
  );
  return pem(seq(tbs, ecdsaWithSha256, bits(createSign('sha256').update(tbs).sign(opts.signer))));
}

export interface TestCa {
  /** The CA certificate (PEM): what a client must trust. */
  cert: string;
  /** A server certificate and key for `names` (the first is the subject), signed by this CA. */
  issue(names: string[]): { cert: string; key: string };
}

/** A fresh private certificate authority. Its keys are P-256: an RSA-2048 key costs a loaded core a second. */
export function makeTestCa(cn = 'Postern Test CA'): TestCa {
  const ca = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const cert = certificate({
    subject: cn,
    issuer: cn,
    publicKey: ca.publicKey,
    signer: ca.privateKey,
    extensions: [
      extension('2.5.29.19', true, seq(bool(true))), // basicConstraints: CA
      extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x01, 0x06]))), // keyUsage: keyCertSign, cRLSign
    ],
  });
  return {
    cert,
    issue(names) {
      const leaf = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      return {
        key: leaf.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        cert: certificate({
          subject: names[0],
          issuer: cn,
          publicKey: leaf.publicKey,
          signer: ca.privateKey,
          extensions: [
            extension('2.5.29.17', false, seq(...names.map(altName))), // subjectAltName
            extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage: serverAuth
          ],
        }),
      };
    },
  };
}
