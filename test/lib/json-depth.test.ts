// The raw-text nesting scan (src/lib/json-depth.ts): a table of the cases strings make hard, then
// generated JSON held to the depth of the value JSON.parse builds (walked without recursion).
import fc from 'fast-check';
import t from 'tap';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../src/lib/json-depth.js';
import { holds } from '../helpers/property.js';

/** The nesting of a parsed value, counted the way the scan counts (objects and arrays). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, above] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, above + 1);
    for (const child of Object.values(v)) stack.push([child, above + 1]);
  }
  return deepest;
}

t.test('a table of texts and their verdicts at a limit of 2', async (t) => {
  const cases: [string, boolean][] = [
    ['1', false],
    ['"[[[["', false],
    ['[]', false],
    ['[[]]', false],
    ['[[[]]]', true],
    ['{"a":{"b":{}}}', true],
    ['{"a":{"b":1},"c":{"d":2}}', false], // wide, not deep
    ['[[1],[2],[3],[4]]', false],
    ['["\\"[[[["]', false], // an escaped quote does not end the string
    ['["\\\\",[[1]]]', true], // an escaped backslash does: the brackets after it count
    ['["\\\\\\"[[[",1]', false], // three backslashes: the quote is escaped
    ['[["a\\u005b\\u005b"]]', false], // \u005b is a bracket only once parsed
    ['["unterminated [[[[', false], // not JSON: left to JSON.parse
    ['[[', false],
    ['[[[', true],
    ['  [ [ [ ] ] ]  ', true],
    ['["é[", ["日本[["]]', false], // multi-byte UTF-8 never holds an ASCII byte
  ];
  for (const [text, deeper] of cases) {
    t.equal(nestsDeeperThan(text, 2), deeper, text);
    t.equal(nestsDeeperThan(Buffer.from(text), 2), deeper, `${text} (bytes)`);
  }
});

t.test('the default limit and very deep texts, without recursion', async (t) => {
  t.equal(MAX_JSON_DEPTH, 64);
  t.notOk(nestsDeeperThan('['.repeat(64) + ']'.repeat(64)));
  t.ok(nestsDeeperThan('['.repeat(65) + ']'.repeat(65)));
  t.ok(nestsDeeperThan('['.repeat(5_000_000)), 'five million levels: found at the 65th');
  const manyEscapes = `["${'\\\\'.repeat(1_000_000)}"]`;
  t.notOk(nestsDeeperThan(manyEscapes), 'a million escaped backslashes, linear');
});

t.test('the scan agrees with the parsed value’s depth on generated JSON', async (t) => {
  // Strings rich in brackets, quotes and backslashes, so the scan's string skipping is exercised.
  const tricky = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', 'é', ' ', ':', ','), maxLength: 12 });
  const value = fc.letrec<{ v: unknown }>((tie) => ({
    v: fc.oneof(
      { depthSize: 'small', maxDepth: 8 },
      tricky,
      fc.integer(),
      fc.constant(null),
      fc.array(tie('v'), { maxLength: 4 }),
      fc.dictionary(tricky, tie('v'), { maxKeys: 4 }),
    ),
  })).v;
  await holds(
    t,
    'scan depth = parsed depth',
    fc.property(value, fc.integer({ min: 0, max: 9 }), fc.boolean(), (v, limit, pretty) => {
      const text = JSON.stringify(v, null, pretty ? 2 : undefined);
      return nestsDeeperThan(text, limit) === depthOf(JSON.parse(text)) > limit;
    }),
    3000,
  );
});
