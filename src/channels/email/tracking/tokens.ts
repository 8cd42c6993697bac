// Signed tokens for the open pixel, the click redirect and one-click unsubscribe. A token carries
// everything its route needs (message, recipient, and for clicks the exact link) and an HMAC over
// it, so the routes need no lookup table and a click can only ever redirect to the link that was
// signed. The HMAC key is `tracking.secret` when set, else a random secret created once in the
// database (shared by every node of a scale-out).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../../db/index.js';
import type { Clock } from '../../../lib/clock.js';

export type TokenKind = 'open' | 'click' | 'unsubscribe';

export interface TokenPayload {
  k: TokenKind;
  /** msg_ public id. */
  m: string;
  /** Workspace id (unsubscribe). */
  w?: string;
  /** Recipient address (unsubscribe). */
  r?: string;
  /** The link (click). */
  u?: string;
}

export interface TokenSigner {
  sign(payload: TokenPayload): string;
  /** The payload of a genuine token of the given kind, or null. */
  verify(token: string, kind: TokenKind): TokenPayload | null;
}

export function createTokenSigner(secret: string): TokenSigner {
  const mac = (data: string) => createHmac('sha256', secret).update(data).digest().subarray(0, 18);
  return {
    sign(payload) {
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      return `${body}.${mac(body).toString('base64url')}`;
    },
    verify(token, kind) {
      const dot = token.lastIndexOf('.');
      if (dot <= 0) return null;
      const body = token.slice(0, dot);
      const sig = Buffer.from(token.slice(dot + 1), 'base64url');
      const want = mac(body);
      if (sig.length !== want.length || !timingSafeEqual(sig, want)) return null;
      try {
        const p = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as TokenPayload;
        return p.k === kind && typeof p.m === 'string' ? p : null;
      } catch {
        return null;
      }
    },
  };
}

/** The named secret from `email_secrets`, created on first use (concurrent creators agree). */
export async function loadSecret(db: Db, clock: Clock, name: string): Promise<string> {
  const existing = await db.selectFrom('email_secrets').select('value').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.value;
  await db
    .insertInto('email_secrets')
    .values({ name, value: randomBytes(32).toString('base64url'), created_at: clock.now().toISOString() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('email_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}
