// The throttle's wait, as a table: free failures cost nothing, then 1 s after the last failure,
// doubling with each further one, never more than the window.
import t from 'tap';
import { throttleWait } from '../../src/submission/throttle.js';

const WINDOW = 15 * 60_000;
const cases: [n: number, sinceLast: number, wait: number][] = [
  [0, 0, 0],
  [4, 0, 0],
  [5, 0, 1_000],
  [5, 400, 600],
  [5, 1_000, 0],
  [6, 0, 2_000],
  [7, 1_500, 2_500],
  [10, 0, 32_000],
  [15, 0, 900_000],
  [40, 0, 900_000],
  [1_000, 899_999, 1],
];
for (const [n, sinceLast, wait] of cases) {
  t.equal(throttleWait(n, 10_000, 5, WINDOW, 10_000 + sinceLast), wait, `${n} failures, the last ${sinceLast} ms ago: wait ${wait} ms`);
}
