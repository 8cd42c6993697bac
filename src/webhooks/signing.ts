// Standard Webhooks signing (https://www.standardwebhooks.com): the signed content is
// `{webhook-id}.{webhook-timestamp}.{body}`, HMAC-SHA256 keyed with the base64-decoded part of the
// secret after `whsec_`, sent as `v1,<base64>`. During a rotation both the new and the previous
// secret sign, space-separated, so receivers can switch at their own pace.
import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

function keyOf(secret: string): Buffer {
  const raw = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Buffer.from(raw, 'base64');
}

/** One `v1,<base64>` signature of a delivery. */
function sign(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The signature header's value: every given secret's `v1,<base64>`, space-separated. */
export function signatures(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => sign(s, id, timestamp, body)).join(' ');
}

/** The three Standard Webhooks headers for one attempt; every given secret contributes a signature. */
export function signatureHeaders(secrets: string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatures(secrets, id, timestamp, body),
  };
}
