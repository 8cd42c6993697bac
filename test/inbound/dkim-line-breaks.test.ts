// The line-break pass in front of mailauth's DKIM hashing (inbound/dkim-line-breaks.ts) yields
// exactly what mailauth's own yields, piece by piece, across chunk boundaries, on random input
// rich in CR and LF, and DKIM verdicts are unchanged with it installed.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import t from 'tap';
import { ensureLinebreaks } from '../../src/inbound/dkim-line-breaks.js';
import { holds } from '../helpers/property.js';

const require = createRequire(import.meta.url);
// Loaded here without installLineBreaks(): the prototype still holds mailauth's own.
const { MessageParser } = require('mailauth/lib/dkim/message-parser') as {
  MessageParser: { prototype: { ensureLinebreaks(this: { lastByte?: number }, input: Buffer): Generator<Buffer> } };
};
const original = MessageParser.prototype.ensureLinebreaks;

/** Every piece each yields for the same chunks, and the state each leaves. */
function run(fn: typeof original, chunks: Buffer[]) {
  const self: { lastByte?: number } = {};
  const pieces: string[] = [];
  for (const chunk of chunks) for (const piece of fn.call(self, chunk)) pieces.push(piece.toString('latin1'));
  return { pieces, lastByte: self.lastByte };
}

// A tiny deterministic generator, so a failure can be reproduced.
function random(seed: number) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

t.test('the same pieces as mailauth, on the shapes that matter', async (t) => {
  for (const text of ['', '\n', '\n\n', '\r\n', '\r\n\n', 'a\nb', 'a\r\nb\n', '\n\nabc\n', 'abc', 'x\r', '\rx\n', 'a\r\n\r\n\nb\n\n']) {
    const chunks = [Buffer.from(text, 'latin1')];
    t.same(run(ensureLinebreaks, chunks), run(original, chunks), JSON.stringify(text));
  }
  t.same(
    run(ensureLinebreaks, [Buffer.from('a\r'), Buffer.from('\nb')]),
    run(original, [Buffer.from('a\r'), Buffer.from('\nb')]),
    'a CR at the end of a chunk',
  );
  t.same(
    run(ensureLinebreaks, [Buffer.from('a\r\n'), Buffer.from('\n\nb')]),
    run(original, [Buffer.from('a\r\n'), Buffer.from('\n\nb')]),
    'LFs across chunks',
  );
});

t.test('the same pieces as mailauth, on random input cut at random places', async (t) => {
  const next = random(19);
  const alphabet = ['\r', '\n', '\n', 'a', 'b', '\r\n', ' '];
  for (let round = 0; round < 500; round++) {
    let text = '';
    const length = Math.floor(next() * 200);
    for (let i = 0; i < length; i++) text += alphabet[Math.floor(next() * alphabet.length)];
    const bytes = Buffer.from(text, 'latin1');
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = 1 + Math.floor(next() * 40);
      chunks.push(bytes.subarray(at, at + size));
      at += size;
    }
    const mine = run(ensureLinebreaks, chunks);
    const theirs = run(original, chunks);
    if (JSON.stringify(mine) !== JSON.stringify(theirs)) {
      t.same(mine, theirs, `round ${round}: ${JSON.stringify(text)}`);
      return;
    }
  }
  t.pass('500 random inputs alike');
});

t.test('generated input cut at generated places, empty chunks too: the same pieces as mailauth', async (t) => {
  const bytes = fc.uint8Array({ maxLength: 400 }).chain((noise) =>
    fc.array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(0x0d, 0x0a, 0x0a, 0x61, 0x20) }, fc.constantFrom(...noise, 0x00, 0xff)), {
      maxLength: 400,
    }),
  );
  const sizes = fc.array(fc.nat({ max: 64 }), { maxLength: 30 });
  await holds(
    t,
    'pieces and the state they leave',
    fc.property(bytes, sizes, (input, cuts) => {
      const all = Buffer.from(input);
      const chunks: Buffer[] = [];
      let at = 0;
      for (const size of cuts) {
        chunks.push(all.subarray(at, at + size));
        at += size;
      }
      if (at < all.length) chunks.push(all.subarray(at));
      assert.deepStrictEqual(run(ensureLinebreaks, chunks), run(original, chunks));
    }),
    1000,
  );
});
