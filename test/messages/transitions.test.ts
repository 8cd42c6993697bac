// The transition table (messages/transitions.ts) written out independently: every allowed change
// of status with its trigger, and nothing else. A row added, dropped or altered in the table fails
// here; test/messages/ledger.test.ts checks that the ledger writes each one.
import t from 'tap';
import { canMove, TRANSITIONS, type From, type Trigger } from '../../src/messages/transitions.js';
import { MESSAGE_STATUSES } from '../../src/contract/messages.js';

// from > to > trigger, as docs/architecture.md and the header of transitions.ts describe them.
const EXPECTED = [
  'null>queued>accept',
  'null>scheduled>accept',
  'scheduled>queued>due',
  'scheduled>canceled>cancel',
  'queued>canceled>cancel',
  'queued>rendered>render',
  'queued>failed>render-failed',
  'rendered>blocked>scan',
  'rendered>suppressed>hold',
  'rendered>opted_out>hold',
  'rendered>failed>no-transport',
  'rendered>dispatched>dispatch',
  'dispatched>dispatched>retry',
  'dispatched>dispatched>defer',
  'dispatched>failed>render-failed',
  'dispatched>failed>no-transport',
  'dispatched>delivered>outcome',
  'dispatched>sent>outcome',
  'dispatched>failed>outcome',
  'dispatched>failed>purge',
  'dispatched>suppressed>outcome',
  'dispatched>failed>retries-expired',
  'dispatched>failed>dsn',
  'sent>failed>dsn',
  'delivered>failed>dsn',
  'sent>delivered>provider-callback',
  'sent>failed>provider-callback',
  'delivered>failed>provider-callback',
];

const TRIGGERS: Trigger[] = [
  'accept',
  'due',
  'cancel',
  'render',
  'render-failed',
  'scan',
  'hold',
  'no-transport',
  'dispatch',
  'retry',
  'defer',
  'outcome',
  'retries-expired',
  'dsn',
  'provider-callback',
  'purge',
];

t.test('the table holds exactly the allowed changes', async (t) => {
  t.same(TRANSITIONS.map((tr) => `${tr.from}>${tr.to}>${tr.trigger}`).sort(), [...EXPECTED].sort());
});

t.test('canMove allows exactly the table, for every status pair and trigger', async (t) => {
  const wrong: string[] = [];
  let allowed = 0;
  for (const from of [null, ...MESSAGE_STATUSES] as From[]) {
    for (const to of MESSAGE_STATUSES) {
      for (const trigger of TRIGGERS) {
        const key = `${from}>${to}>${trigger}`;
        const can = canMove(from, to, trigger);
        if (can) allowed++;
        if (can !== EXPECTED.includes(key)) wrong.push(key);
      }
    }
  }
  t.same(wrong, [], 'no combination decided against the table');
  t.equal(allowed, EXPECTED.length);
});

t.test('the key does not let parts run into each other', async (t) => {
  // A status or trigger is never confused with a neighbour's text.
  t.notOk(canMove('queued', 'rendered', 'render-failed'));
  t.notOk(canMove('dispatched', 'failed', 'retry'));
});
