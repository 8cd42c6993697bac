// DANE for SMTP (RFC 7672): matching an MX host's certificate chain against its TLSA records.
// Only DANE-TA(2) and DANE-EE(3) are usable for SMTP (§3.1.3); PKIX-TA(0) and PKIX-EE(1) records are
// ignored. DANE-EE matches the leaf certificate or its public key and nothing else counts: not the
// name, not the expiry, not who signed it (§3.1.1). DANE-TA matches a certificate the server sent in
// its chain as the trust anchor; the chain from the leaf up to it must verify, the leaf must be
// within its validity period and name the MX host or the recipient domain (§3.2.2).
// This runs where the socket is (a delivery thread), so it is pure: certificates in, verdict out.
import { createHash, X509Certificate } from 'node:crypto';

export interface Tlsa {
  usage: number;
  selector: number;
  matchingType: number;
  data: Uint8Array;
}

export type DaneVerdict = { ok: true; matched: string } | { ok: false; reason: string };

export const isUsableTlsa = (r: Tlsa): boolean => (r.usage === 2 || r.usage === 3) && r.selector <= 1 && r.matchingType <= 2;

/** `3 1 1`, the way TLSA records are written. */
const describeTlsa = (r: Tlsa): string => `${r.usage} ${r.selector} ${r.matchingType}`;

function associated(cert: X509Certificate, r: Tlsa): Buffer {
  const selected = r.selector === 0 ? cert.raw : (cert.publicKey.export({ type: 'spki', format: 'der' }) as Buffer);
  if (r.matchingType === 0) return selected;
  return createHash(r.matchingType === 1 ? 'sha256' : 'sha512')
    .update(selected)
    .digest();
}

const matches = (cert: X509Certificate, r: Tlsa) => associated(cert, r).equals(Buffer.from(r.data));

/**
 * Checks a chain (leaf first, as the server sent it) against the TLSA records of the host.
 * `names` are the names a DANE-TA leaf may carry: the MX host, then the recipient domain.
 */
export function checkDane(chain: X509Certificate[], records: Tlsa[], names: string[], now: Date): DaneVerdict {
  const usable = records.filter(isUsableTlsa);
  if (chain.length === 0) return { ok: false, reason: 'DANE: the server sent no certificate' };
  const leaf = chain[0];
  for (const r of usable.filter((x) => x.usage === 3)) {
    if (matches(leaf, r)) return { ok: true, matched: `DANE-EE ${describeTlsa(r)}` };
  }
  for (const r of usable.filter((x) => x.usage === 2)) {
    const at = chain.findIndex((c, i) => i > 0 && matches(c, r));
    if (at < 0) continue;
    for (let i = 0; i < at; i++) {
      if (!chain[i].checkIssued(chain[i + 1]) || !chain[i].verify(chain[i + 1].publicKey)) {
        return { ok: false, reason: `DANE: certificate ${i} of the chain is not signed by the next one` };
      }
    }
    if (now < new Date(leaf.validFrom) || now > new Date(leaf.validTo)) {
      return { ok: false, reason: `DANE: the certificate is outside its validity (${leaf.validFrom} – ${leaf.validTo})` };
    }
    const name = names.find((n) => leaf.checkHost(n, { wildcards: true, partialWildcards: false }) !== undefined);
    if (!name) return { ok: false, reason: `DANE: the certificate names neither ${names.join(' nor ')}` };
    return { ok: true, matched: `DANE-TA ${describeTlsa(r)}` };
  }
  return {
    ok: false,
    reason: `DANE: no TLSA record matches the certificate (${usable.map(describeTlsa).join(', ') || 'no usable record'})`,
  };
}

/** The chain a TLS socket's peer sent, leaf first, as X509Certificate objects. */
export function peerChain(detailed: { raw?: Buffer; issuerCertificate?: unknown } | null | undefined): X509Certificate[] {
  const out: X509Certificate[] = [];
  const seen = new Set<string>();
  let c = detailed as { raw?: Buffer; issuerCertificate?: unknown } | undefined;
  while (c?.raw && out.length < 10) {
    const key = c.raw.toString('base64');
    if (seen.has(key)) break;
    seen.add(key);
    out.push(new X509Certificate(c.raw));
    c = c.issuerCertificate as typeof c;
  }
  return out;
}
