// The fast quoted-printable encoder (src/channels/email/quoted-printable.ts) against its oracle,
// nodemailer's own `qp.encode` and `qp.wrap`, over generated inputs: the fast path may only exist
// while it writes nodemailer's bytes exactly.
import { createRequire } from 'node:module';
import fc from 'fast-check';
import t from 'tap';
import { encodeAscii, QP_ASCII, quotedPrintableAscii, wrapEncoded } from '../../../src/channels/email/quoted-printable.js';
import { holds } from '../../helpers/property.js';

const qp = createRequire(import.meta.url)('nodemailer/lib/qp/index.js') as {
  encode(b: Buffer | string): string;
  wrap(s: string, lineLength?: number): string;
};

// Characters where the encoder and the wrapper make their choices: `=`, blanks, the punctuation
// the wrapper breaks after, hex digits (which look like the tail of an escape), line endings.
const ASCII_TRICKY = ['a', 'b', 'F', '3', 'D', '0', '=', ' ', '\t', '.', ',', '!', '?', '\r', '\n', '\r\n', 'x'];
const asciiText = fc
  .array(fc.oneof(fc.constantFrom(...ASCII_TRICKY), fc.string({ unit: 'grapheme-ascii', maxLength: 90, size: 'max' })), {
    maxLength: 200,
    size: 'max',
  })
  .map((parts) => parts.join(''))
  .filter((s) => QP_ASCII.test(s));

t.test('encodeAscii is nodemailer’s encode for every ASCII text', async (t) => {
  await holds(
    t,
    'encodeAscii equals qp.encode',
    fc.property(asciiText, (s) => encodeAscii(s) === qp.encode(Buffer.from(s))),
    2000,
  );
  t.equal(encodeAscii('a=b \r\nc\t'), 'a=3Db=20\r\nc=09');
});

t.test('wrapEncoded is nodemailer’s wrap at 76 for any string', async (t) => {
  // Its domain is what `encode` writes: encoded ASCII, encoded UTF-8 (escapes of multi-byte
  // sequences, which must not be split), and encoded bytes of any kind, biased to the ones the
  // wrapper decides on (`=`, blanks, punctuation, bare CR and LF, UTF-8 lead and continuation bytes).
  // (Outside it, nodemailer's own wrap never ends on a trailing bare `=`.)
  const encodedUtf8 = fc.string({ unit: 'grapheme', maxLength: 400, size: 'max' }).map((s) => qp.encode(Buffer.from(s)));
  const TRICKY_BYTES = [0x3d, 0x20, 0x09, 0x2e, 0x2c, 0x21, 0x3f, 0x0d, 0x0a, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x61, 0x33, 0x44];
  const encodedBytes = fc
    .array(fc.oneof(fc.constantFrom(...TRICKY_BYTES), fc.integer({ min: 0, max: 255 })), { maxLength: 400, size: 'max' })
    .map((bytes) => qp.encode(Buffer.from(bytes)));
  await holds(
    t,
    'wrapEncoded equals qp.wrap',
    fc.property(fc.oneof(asciiText.map(encodeAscii), encodedUtf8, encodedBytes), (s) => wrapEncoded(s) === qp.wrap(s, 76)),
    3000,
  );
  t.equal(wrapEncoded('x'.repeat(80)), qp.wrap('x'.repeat(80), 76));
});

t.test('quotedPrintableAscii is nodemailer’s encoder stream, lines within 76', async (t) => {
  await holds(
    t,
    'quotedPrintableAscii equals the encoder stream',
    fc.property(asciiText, (s) => {
      const out = quotedPrintableAscii(s);
      return out === qp.wrap(qp.encode(Buffer.from(s)), 76) && out.split(/\r\n|\r|\n/).every((l) => l.length <= 76);
    }),
    1000,
  );
});
