// The forwarder's two secrets, generated on first use and kept in `forwarding_keys` so every node
// sharing the database signs alike: the SRS hash secret and the RSA key of the ARC seal.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Db } from '../db/index.js';
import type { Clock } from '../lib/clock.js';

async function loadOrCreate(db: Db, clock: Clock, name: string, make: () => string): Promise<string> {
  const existing = await db.selectFrom('forwarding_keys').select('value').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.value;
  await db
    .insertInto('forwarding_keys')
    .values({ name, value: make(), created_at: clock.now().toISOString() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  return (await db.selectFrom('forwarding_keys').select('value').where('name', '=', name).executeTakeFirstOrThrow()).value;
}

export const srsSecret = (db: Db, clock: Clock) => loadOrCreate(db, clock, 'srs-secret', () => randomBytes(32).toString('base64'));

export interface ArcKey {
  privateKey: string;
  /** base64 SPKI DER: the `p=` of the TXT record to publish. */
  publicKey: string;
}

export async function arcKey(db: Db, clock: Clock): Promise<ArcKey> {
  const value = await loadOrCreate(db, clock, 'arc-key', () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'der' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    return JSON.stringify({ privateKey, publicKey: (publicKey as unknown as Buffer).toString('base64') });
  });
  return JSON.parse(value) as ArcKey;
}
