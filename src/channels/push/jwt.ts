// Compact JWS signing for provider tokens: ES256 (APNs provider tokens, raw r||s signatures as JOSE
// requires) and RS256 (Google service-account assertions).
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export function signJwt(
  alg: 'ES256' | 'RS256',
  key: KeyObject | string,
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
): string {
  const k = typeof key === 'string' ? createPrivateKey(key) : key;
  const input = `${b64url(JSON.stringify({ alg, typ: 'JWT', ...header }))}.${b64url(JSON.stringify(claims))}`;
  const signature =
    alg === 'ES256' ? sign('sha256', Buffer.from(input), { key: k, dsaEncoding: 'ieee-p1363' }) : sign('sha256', Buffer.from(input), k);
  return `${input}.${b64url(signature)}`;
}
