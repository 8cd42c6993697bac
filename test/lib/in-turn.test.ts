// One call at a time, in the order called: a call starts only once the one before has settled,
// whether it succeeded or failed, and each caller gets its own result or error.
import t from 'tap';
import { inTurn } from '../../src/lib/in-turn.js';

t.test('calls run one after another, in order', async (t) => {
  const run = inTurn();
  const log: string[] = [];
  let running = 0;
  let most = 0;
  const work = (name: string, ticks: number) => async () => {
    running++;
    most = Math.max(most, running);
    log.push(`start ${name}`);
    for (let i = 0; i < ticks; i++) await new Promise((r) => setImmediate(r));
    log.push(`end ${name}`);
    running--;
    return name;
  };
  // The long one first: side by side, the short ones would end before it.
  const results = await Promise.all([run(work('a', 20)), run(work('b', 1)), run(work('c', 5))]);
  t.same(results, ['a', 'b', 'c']);
  t.equal(most, 1, 'never two at once');
  t.same(log, ['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
});

t.test('a failure is its caller’s alone and does not stop the queue', async (t) => {
  const run = inTurn();
  const failing = run(async () => {
    await new Promise((r) => setImmediate(r));
    throw new Error('broken message');
  });
  const next = run(async () => 'parsed');
  await t.rejects(failing, /broken message/);
  t.equal(await next, 'parsed');
  // A synchronous throw inside the work is a rejection too, not an exception at the call.
  const thrown = run(() => {
    throw new Error('at once');
  });
  await t.rejects(thrown, /at once/);
  t.equal(await run(async () => 1), 1);
});
