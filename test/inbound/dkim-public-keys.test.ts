// What mailauth made of a DKIM key record is kept (inbound/dkim-public-keys.ts): for every record
// (RSA and Ed25519 keys, short keys, bad base64, another version, a key type that does not match,
// no key at all) the wrapper answers what mailauth's own getPublicKey answers, the first time and
// from what it kept; DNS is still asked each time, and a record that changed is read again.
import { createRequire } from 'node:module';
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { keptPublicKeys } from '../../src/inbound/dkim-public-keys.js';

const require = createRequire(import.meta.url);
type GetPublicKey = Parameters<typeof keptPublicKeys>[0];
const { getPublicKey } = require('mailauth/lib/tools') as { getPublicKey: GetPublicKey };

const spki = (bits: number) =>
  generateKeyPairSync('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  }).publicKey.toString('base64');
const ed = generateKeyPairSync('ed25519', {
  publicKeyEncoding: { type: 'spki', format: 'der' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
})
  .publicKey.subarray(-32)
  .toString('base64');
const rsa2048 = spki(2048);
const rsa1024 = spki(1024);

const RECORDS: [string, string[][]][] = [
  ['RSA 2048', [[`v=DKIM1; k=rsa; p=${rsa2048}`]]],
  ['RSA 2048 in two strings', [[`v=DKIM1; k=rsa; p=${rsa2048.slice(0, 200)}`, rsa2048.slice(200)]]],
  ['RSA 1024', [[`v=DKIM1; p=${rsa1024}`]]],
  ['Ed25519', [[`v=DKIM1; k=ed25519; p=${ed}`]]],
  ['a key type that does not match', [[`v=DKIM1; k=ed25519; p=${rsa2048}`]]],
  ['another version', [[`v=DKIM2; p=${rsa2048}`]]],
  ['bad base64', [['v=DKIM1; p=not*base64']]],
  ['no key', [['v=DKIM1; p=']]],
  ['not a key', [[`v=DKIM1; p=${Buffer.from('hello world, not a key').toString('base64')}`]]],
  ['no record', []],
];

/** What a call gives: the answer, or the error's code and message. */
async function outcome(get: GetPublicKey, min: number | undefined, answer: string[][]) {
  let asked = 0;
  const resolver = async () => {
    asked++;
    return answer;
  };
  try {
    return { asked, ...(await get('DKIM', 'sel._domainkey.example.com', min, resolver)), askedAfter: asked };
  } catch (err) {
    return { error: (err as { code?: string }).code, message: (err as Error).message, askedAfter: asked };
  }
}

t.test('every record: what mailauth answers, read anew and kept', async (t) => {
  const kept = keptPublicKeys(getPublicKey);
  for (const min of [undefined, 2048]) {
    for (const [label, answer] of RECORDS) {
      const theirs = await outcome(getPublicKey, min, answer);
      t.same(await outcome(kept, min, answer), theirs, `${label} (minimum ${min ?? 'default'}): the first time`);
      t.same(await outcome(kept, min, answer), theirs, `${label} (minimum ${min ?? 'default'}): kept`);
      t.equal((await outcome(kept, min, answer)).askedAfter, 1, `${label}: DNS asked once a call`);
    }
  }
});

t.test('a record that changed is read again', async (t) => {
  const kept = keptPublicKeys(getPublicKey);
  const first = await outcome(kept, undefined, [[`v=DKIM1; p=${rsa2048}`]]);
  const second = await outcome(kept, undefined, [[`v=DKIM1; p=${rsa1024}`]]);
  t.equal((second as { modulusLength: number }).modulusLength, 1024);
  t.not((first as { publicKey: string }).publicKey, (second as { publicKey: string }).publicKey);
  const gone = await outcome(kept, undefined, []);
  t.equal((gone as { error: string }).error, 'EINVALIDVAL', 'and one that is gone is gone');
});

t.test('what it hands out is a copy', async (t) => {
  const kept = keptPublicKeys(getPublicKey);
  const resolver = async () => [[`v=DKIM1; p=${rsa2048}`]];
  const a = await kept('DKIM', 'sel._domainkey.example.com', undefined, resolver);
  a.publicKey = 'changed';
  const b = await kept('DKIM', 'sel._domainkey.example.com', undefined, resolver);
  t.match(b.publicKey, /^-----BEGIN RSA PUBLIC KEY-----/);
});
