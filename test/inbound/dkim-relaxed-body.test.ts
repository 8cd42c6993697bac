// The relaxed body canonicalization in front of mailauth's (inbound/dkim-relaxed-body.ts) hashes
// exactly what mailauth's own update hashes: the same body hash, the same counts, across chunk
// boundaries and the l= limit, on generated bodies rich in blanks, tabs, CR and LF, on base64 and
// plain lines, and on the two mixed (lines to rewrite between lines that stand).
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import t from 'tap';
import { firstRewrite, installRelaxedBody } from '../../src/inbound/dkim-relaxed-body.js';
import { cutAt, holds } from '../helpers/property.js';

const require = createRequire(import.meta.url);

interface Hash {
  byteLength: number;
  bodyHashedBytes: number;
  canonicalizedLength: number;
  update(chunk: Buffer | null, final?: boolean): void;
  digest(encoding: 'base64'): string;
}
const { RelaxedHash } = require('mailauth/lib/dkim/body/relaxed') as {
  RelaxedHash: { new (algorithm?: string, maxBodyLength?: number): Hash; prototype: Hash };
};
// mailauth's own, taken before ours is put in its place.
const original = RelaxedHash.prototype.update;
installRelaxedBody();
const ours = RelaxedHash.prototype.update;
t.teardown(() => {
  RelaxedHash.prototype.update = ours;
});

/** The body hash and counts one update gives for these chunks. */
function hashed(update: Hash['update'], chunks: Buffer[], algorithm: string, limit: number | undefined) {
  RelaxedHash.prototype.update = update;
  const h = new RelaxedHash(algorithm, limit);
  for (const c of chunks) h.update(c);
  const digest = h.digest('base64');
  return { digest, byteLength: h.byteLength, bodyHashedBytes: h.bodyHashedBytes, canonicalizedLength: h.canonicalizedLength };
}

const PIECES = ['a', 'QUJD', 'line', ' ', '  ', '\t', '\r', '\n', '\r\n', '\r\n', '\r\n\r\n', ' \r\n', '=', '-- '];
const BASE64_LINE = fc.uint8Array({ minLength: 1, maxLength: 57 }).map((b) => `${Buffer.from(b).toString('base64')}\r\n`);

const body = fc.oneof(
  { weight: 2, arbitrary: fc.array(fc.constantFrom(...PIECES), { maxLength: 80 }).map((p) => p.join('')) },
  { weight: 2, arbitrary: fc.array(BASE64_LINE, { maxLength: 30 }).map((l) => l.join('')) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.array(BASE64_LINE, { maxLength: 10 }), fc.array(fc.constantFrom(...PIECES), { maxLength: 10 }))
      .map(([lines, tail]) => lines.join('') + tail.join('')),
  },
  // Many short lines, some to rewrite and some not: past the sixteen a chunk takes here, too.
  {
    weight: 2,
    arbitrary: fc
      .array(
        fc.oneof(
          BASE64_LINE,
          fc.array(fc.constantFrom(...PIECES), { maxLength: 4 }).map((p) => `${p.join('')}\r\n`),
        ),
        { maxLength: 60 },
      )
      .map((lines) => lines.join('')),
  },
);

t.test('the same body hash as mailauth, on the shapes that matter', async (t) => {
  const cases = [
    'QUJD\r\n-- \r\nQUJD\r\nQUJD',
    'a\tb\r\nQUJD\r\nc  d\r\nQUJD\r\n',
    'x\r\n'.repeat(5) + 'a \r\n'.repeat(40) + 'QUJD\r\n',
    '\n\n\r\nQUJD',
    '',
    '\r\n',
    'a',
    'a\r\n',
    'a\r\n\r\n\r\n',
    'QUJD\r\nQUJD\r\n',
    'QUJD\r\nQU',
    'a  b\r\n',
    'a\tb\r\n',
    'a \r\n',
    '\nb',
    'a\nb\r\n',
    'a\rb\r\n',
  ];
  for (const text of cases) {
    const bytes = Buffer.from(text, 'latin1');
    for (const sizes of [[bytes.length], [1, 1, 1, 1, 1, 1, 1, 1], [2, 3], [4]]) {
      const chunks = cutAt(bytes, sizes);
      t.same(
        hashed(ours, chunks, 'sha256', undefined),
        hashed(original, chunks, 'sha256', undefined),
        `${JSON.stringify(text)} in ${sizes.join(', ')}`,
      );
    }
  }
  t.equal(firstRewrite(Buffer.from('QUJD\r\nQUJD\r\n')), -1, 'base64 lines stand as they are');
  t.equal(firstRewrite(Buffer.from('ab\r\na\nb')), 5, 'an LF without a CR does not');
  t.equal(firstRewrite(Buffer.from('\nb')), 0, 'nor one that begins the chunk');
  t.equal(firstRewrite(Buffer.from('a\tb  c \r\n')), 1, 'the first of several');
  t.equal(firstRewrite(Buffer.from('a\tb  c \r\n'), 2), 3, 'from an offset');
});

t.test('the same body hash as mailauth, on generated bodies cut at generated places', async (t) => {
  let fast = 0;
  const runs = await holds(
    t,
    'digest and counts',
    fc.property(
      body,
      fc.array(fc.integer({ min: 1, max: 90 }), { maxLength: 12 }),
      fc.constantFrom('sha256', 'sha1'),
      fc.option(fc.integer({ min: 0, max: 300 }), { nil: undefined, freq: 3 }),
      (text, sizes, algorithm, limit) => {
        const chunks = cutAt(Buffer.from(text, 'latin1'), sizes);
        const pushedHere = (c: Buffer) => {
          const lf = c.indexOf(0x0a);
          const rewrite = firstRewrite(c);
          return lf !== -1 && (rewrite === -1 || lf < rewrite);
        };
        if (limit === undefined && chunks.some(pushedHere)) fast++;
        assert.deepStrictEqual(hashed(ours, chunks, algorithm, limit), hashed(original, chunks, algorithm, limit));
      },
    ),
    1000,
  );
  t.ok(fast >= runs / 10, `lines were pushed as they stand in ${fast} of ${runs} runs (a tenth at least)`);
});
