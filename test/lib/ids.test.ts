// Ids (lib/ids.ts): public ids are a prefix and 22 base62 characters, internal ids UUIDv7 whose
// first 48 bits are the millisecond, so later rows sort later; both draw on a pool of random bytes
// that hands each byte out once.
import t from 'tap';
import { createIds, randomBase62 } from '../../src/lib/ids.js';

t.test('public ids', async (t) => {
  const ids = createIds();
  const made = Array.from({ length: 20_000 }, () => ids.publicId('msg'));
  t.same(
    made.filter((id) => !/^msg_[0-9A-Za-z]{22}$/.test(id)),
    [],
    'each is msg_ and 22 base62 characters',
  );
  t.equal(new Set(made).size, 20_000, 'no id repeats across many pool refills');
  // Every character of the alphabet turns up, none far more often than the others.
  const counts = new Map<string, number>();
  for (const c of randomBase62(62 * 2000)) counts.set(c, (counts.get(c) ?? 0) + 1);
  t.equal(counts.size, 62);
  const skewed = [...counts].filter(([, n]) => n < 1600 || n > 2400);
  t.same(skewed, [], 'each character about 2,000 times in 124,000');
});

t.test('internal ids are UUIDv7 carrying the millisecond', async (t) => {
  let now = Date.UTC(2026, 10, 27, 3, 30);
  const ids = createIds(() => now);
  const a = ids.uuid();
  now += 1;
  const b = ids.uuid();
  t.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(parseInt(a.replace(/-/g, '').slice(0, 12), 16), Date.UTC(2026, 10, 27, 3, 30), 'the timestamp reads back');
  t.ok(a < b, 'a later millisecond sorts later');
  t.not(ids.uuid(), ids.uuid(), 'two in one millisecond differ');
});
