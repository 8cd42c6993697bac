// The one-time passwords of the dashboard's second factor against RFC 6238's own test vectors and
// against an authenticator on the other side (otplib, as an app on a phone would make the codes):
// for any secret and any moment, the code the app shows is the one Postern expects, and the key
// URI the app reads carries the secret Postern keeps.
import fc from 'fast-check';
import { authenticator } from 'otplib';
import t from 'tap';
import { base32, codeAt, keyUri, matchingStep, stepAt } from '../../src/lib/totp.js';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** base32's inverse, to check what it wrote: any case, spaces and padding (apps show keys in groups); null if not base32. */
function fromBase32(text: string): Buffer | null {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of clean) {
    const v = BASE32.indexOf(ch);
    if (v < 0) return null;
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

// RFC 6238 appendix B, SHA-1: the secret is the ASCII of "12345678901234567890"; the vectors are
// 8 digits, whose last 6 are the 6-digit code.
const RFC_SECRET = Buffer.from('12345678901234567890');
const RFC_VECTORS: [number, string][] = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

t.test("RFC 6238's test vectors", async (t) => {
  for (const [seconds, code] of RFC_VECTORS) t.equal(codeAt(RFC_SECRET, stepAt(seconds * 1000)), code.slice(2), `T = ${seconds}`);
});

t.test('base32 as RFC 4648 writes it', async (t) => {
  // RFC 4648 section 10, without the padding authenticator keys leave out.
  const vectors: [string, string][] = [
    ['', ''],
    ['f', 'MY'],
    ['fo', 'MZXQ'],
    ['foo', 'MZXW6'],
    ['foob', 'MZXW6YQ'],
    ['fooba', 'MZXW6YTB'],
    ['foobar', 'MZXW6YTBOI'],
  ];
  for (const [plain, encoded] of vectors) {
    t.equal(base32(Buffer.from(plain)), encoded, `"${plain}"`);
    t.equal(fromBase32(encoded)!.toString(), plain, `back from ${encoded || '""'}`);
  }
  t.equal(fromBase32('mzxw 6ytb oi==')!.toString(), 'foobar', 'any case, spaces and padding');
  t.equal(fromBase32('MZXW1'), null, 'not base32');
});

t.test('the code an authenticator app shows is the one expected, at any moment, for any secret', async () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 10, maxLength: 64 }), fc.integer({ min: 0, max: 4_102_444_800_000 }), (bytes, ms) => {
      const secret = Buffer.from(bytes);
      const app = authenticator.clone({ epoch: ms });
      const shown = app.generate(base32(secret));
      const expected = codeAt(secret, stepAt(ms));
      if (shown !== expected) throw new Error(`app ${shown}, expected ${expected} at ${ms}`);
      if (matchingStep(secret, shown, ms) !== stepAt(ms)) throw new Error('not matched at its own step');
    }),
    { numRuns: 500 },
  );
});

t.test('a code is good for its step and one either side, never two away', async (t) => {
  const secret = Buffer.from('a secret of twenty b');
  const now = 1_800_000_000_000;
  const code = codeAt(secret, stepAt(now));
  t.equal(matchingStep(secret, code, now), stepAt(now));
  t.equal(matchingStep(secret, code, now + 30_000), stepAt(now), 'the next step still takes it (typed at the turn)');
  t.equal(matchingStep(secret, code, now - 30_000), stepAt(now), 'a phone a step ahead');
  t.equal(matchingStep(secret, code, now + 60_000), null, 'two steps late');
  t.equal(matchingStep(secret, code, now - 60_000), null, 'two steps early');
  for (const bad of ['', '12345', '1234567', 'abcdef', ' 123456', '１２３４５６'])
    t.equal(matchingStep(secret, bad, now), null, `"${bad}" is not a code`);
});

t.test('the key URI carries the secret, the account and the issuer', async (t) => {
  const secret = Buffer.from('0123456789abcdefghij');
  const uri = new URL(keyUri(secret, 'ann+ops@example.com', 'Postern'));
  t.equal(uri.protocol, 'otpauth:');
  t.equal(uri.host, 'totp');
  t.equal(decodeURIComponent(uri.pathname), '/Postern:ann+ops@example.com');
  t.equal(uri.searchParams.get('issuer'), 'Postern');
  t.same(fromBase32(uri.searchParams.get('secret')!), secret);
  t.same([uri.searchParams.get('digits'), uri.searchParams.get('period'), uri.searchParams.get('algorithm')], ['6', '30', 'SHA1']);
  // What otplib writes for the same key names the same label and secret.
  const theirs = new URL(authenticator.keyuri('ann+ops@example.com', 'Postern', base32(secret)));
  t.equal(decodeURIComponent(theirs.pathname), decodeURIComponent(uri.pathname));
  t.equal(theirs.searchParams.get('secret'), uri.searchParams.get('secret'));
});
