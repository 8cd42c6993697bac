// mailauth reads a signer's DKIM key from its DNS record for every signature it verifies: it parses
// the record, checks the key's base64 with a schema, has OpenSSL parse the key and export it again
// as PEM. For mail from one sender that is the same work on the same record each time, and it was
// a tenth of an analysis thread's time on signed mail. This wrapper still asks DNS every time (our
// resolver and its cache decide what the record is now), and hands back mailauth's own answer for
// a record it has read before: the answer is a function of the record's text alone. Records it has
// not read, and every error, are mailauth's as they are.
// test/inbound/dkim-public-keys.test.ts holds it to mailauth's getPublicKey record by record.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

type Resolver = (name: string, type: 'TXT') => Promise<string[][]>;
interface PublicKey {
  publicKey: string;
  rr: string;
  modulusLength: number;
}
type GetPublicKey = (type: string, name: string, minBitLength: number | undefined, resolver?: Resolver) => Promise<PublicKey>;

/** Records kept; past this the oldest is forgotten. */
const KEPT = 500;

/** mailauth's getPublicKey with what it made of each record kept (exported for the test). */
export function keptPublicKeys(original: GetPublicKey): GetPublicKey {
  const kept = new Map<string, PublicKey>();
  return async (type, name, minBitLength, resolver) => {
    if (!resolver) return original(type, name, minBitLength, resolver);
    const answer = await resolver(name, 'TXT');
    const key = JSON.stringify([type, minBitLength ?? null, answer]);
    const known = kept.get(key);
    if (known) return { ...known };
    const found = await original(type, name, minBitLength, () => Promise.resolve(answer));
    if (kept.size >= KEPT) kept.delete(kept.keys().next().value!);
    kept.set(key, { ...found });
    return found;
  };
}

let installed = false;

/**
 * Puts the wrapper in mailauth's tools, where its verifiers take getPublicKey from when they are
 * loaded: so before mailauth itself is (once).
 */
export function installPublicKeys(): void {
  if (installed) return;
  const tools = require('mailauth/lib/tools') as { getPublicKey: GetPublicKey };
  tools.getPublicKey = keptPublicKeys(tools.getPublicKey);
  installed = true;
}
