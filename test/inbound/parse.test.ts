// parseMessage (inbound/parse.ts): what is kept of a message the parser cannot take whole, the
// header fields as named, and its fast paths held to the whole parse over mail of every shape.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { parseMessage } from '../../src/inbound/parse.js';
import { anyMessage, render } from '../helpers/mime-arbitrary.js';
import { holds } from '../helpers/property.js';

const LIMITS = { maxBodyBytes: 1 << 20, maxParts: 100 };

t.test('a header block over 1 MiB keeps the fields that fit in it', async (t) => {
  const head = ['From: Alice <alice@sender.example>', 'Subject: a long header block', 'X-Folded: one\r\n two'];
  const many = Array.from({ length: 30_000 }, (_, i) => `X-Pad-${i}: ${'d'.repeat(30)}`);
  // The fields that fit: each with its line break, and the blank line that ends the block.
  let fit = 0;
  for (let bytes = head.join('\r\n').length + 4; bytes + many[fit].length + 2 <= 1 << 20; fit++) bytes += many[fit].length + 2;
  for (const [label, pad] of [
    ['one long field', `X-Pad: ${'a'.repeat(1 << 20)}`],
    ['a long folded field', `X-Pad: ${'b'.repeat(700_000)}\r\n ${'c'.repeat(700_000)}`],
    ['many fields', many.join('\r\n')],
  ]) {
    const raw = Buffer.from(`${head.join('\r\n')}\r\n${pad}\r\n\r\nthe body\r\n`);
    const p = await parseMessage(raw, LIMITS);
    t.match(p.partial, /^unparseable: .*; kept the headers only$/, `${label}: parsed in part`);
    t.same(p.from, { email: 'alice@sender.example', name: 'Alice' }, `${label}: from`);
    t.equal(p.subject, 'a long header block', `${label}: subject`);
    t.equal(p.headers['x-folded'], 'one two', `${label}: a folded field`);
    const kept = Object.keys(p.headers).filter((k) => k.startsWith('x-pad'));
    const block = Object.entries(p.headers).reduce((n, [k, v]) => n + k.length + 2 + String(v).length + 2, 0);
    t.ok(block <= 1 << 20, `${label}: no more than the limit kept (${block} bytes)`);
    if (label === 'many fields') t.equal(kept.length, fit, `${label}: every field that fits`);
    else t.same(kept, [], `${label}: the field cut by the limit is left out, not kept in part`);
  }
});

t.test('header fields named like an object’s own properties are fields like any other', async (t) => {
  const raw = Buffer.from(
    'From: a@sender.example\r\nConstructor: one\r\n__proto__: two\r\n__proto__: three\r\nX-Twice: a\r\nX-Twice: b\r\n\r\nbody\r\n',
  );
  const { headers } = await parseMessage(raw, LIMITS);
  t.same(
    JSON.parse(JSON.stringify(headers)),
    JSON.parse('{"from":"a@sender.example","constructor":"one","__proto__":["two","three"],"x-twice":["a","b"]}'),
  );
  t.equal(Object.getPrototypeOf(headers), Object.prototype, 'a plain object');
});

// The fast paths (the plain text glance, the multipart/alternative skeleton) against mailparser's
// parse of the whole message, over generated mail of every shape (plain-text.test.ts and
// alternative-text.test.ts lean towards the shapes each takes): every field the same.
t.test('generated messages of every shape: parseMessage gives what the whole parse gives', async (t) => {
  const limitsArb = fc.record({ maxBodyBytes: fc.constantFrom(1 << 20, 100), maxParts: fc.constantFrom(100, 3) });
  await holds(
    t,
    'every field',
    fc.asyncProperty(anyMessage, limitsArb, async (message, limits) => {
      const raw = render(message);
      const { textAt: _, ...fast } = await parseMessage(raw, limits);
      const { textAt: __, ...whole } = await parseMessage(raw, limits, { wholeParse: true });
      assert.deepStrictEqual(fast, whole);
    }),
    300,
  );
});
