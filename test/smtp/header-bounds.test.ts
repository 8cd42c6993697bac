// The header block's bounds (src/smtp/header-bounds.ts) as a table, each message fed whole, split
// at every byte, and a byte at a time: chunk boundaries never change the verdict.
import t from 'tap';
import { headerBounds, type HeaderExcess } from '../../src/smtp/header-bounds.js';

function verdict(message: string, maxBytes: number, maxLines: number, split: (b: Buffer) => Buffer[]): HeaderExcess | null {
  const bounds = headerBounds(maxBytes, maxLines);
  for (const chunk of split(Buffer.from(message))) {
    const excess = bounds.feed(chunk);
    if (excess) return excess;
    if (bounds.done) break;
  }
  return null;
}

const whole = (b: Buffer) => [b];
const bytewise = (b: Buffer) => Array.from({ length: b.length }, (_, i) => b.subarray(i, i + 1));
const at = (i: number) => (b: Buffer) => [b.subarray(0, i), b.subarray(i)];

t.test('a table of header blocks at 40 bytes and 3 lines', async (t) => {
  const cases: [string, string, HeaderExcess | null][] = [
    ['three short lines, then the body', 'A: 1\r\nB: 2\r\nC: 3\r\n\r\nbody', null],
    ['a fourth line', 'A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\nbody', { bound: 'lines', max: 3 }],
    ['a folded line counts as a line', 'A: 1\r\n 2\r\n 3\r\n 4\r\n\r\n', { bound: 'lines', max: 3 }],
    ['exactly 40 bytes', 'A: 12345678901234567890123456789012345\r\n\r\n', null],
    ['41 bytes', 'A: 123456789012345678901234567890123456\r\n\r\n', { bound: 'bytes', max: 40 }],
    ['one line over 40 bytes, unfinished', 'A: ' + 'x'.repeat(60), { bound: 'bytes', max: 40 }],
    ['the body does not count', 'A: 1\r\n\r\n' + 'B: 2\r\n'.repeat(100), null],
    ['no header at all', '\r\nbody\r\n'.repeat(20), null],
    ['a CR alone inside a line is not an end', 'A: \r1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n', { bound: 'lines', max: 3 }],
    ['a bare LF line ends the block too', 'A: 1\n\nB: 2\r\nC: 3\r\nD: 4\r\n', null],
    ['no empty line: all header', 'A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n', { bound: 'lines', max: 3 }],
  ];
  for (const [what, message, expected] of cases) {
    t.same(verdict(message, 40, 3, whole), expected, `${what} (whole)`);
    t.same(verdict(message, 40, 3, bytewise), expected, `${what} (a byte at a time)`);
    for (let i = 0; i <= message.length; i++) {
      const got = verdict(message, 40, 3, at(i));
      if (JSON.stringify(got) !== JSON.stringify(expected)) t.fail(`${what}: split at ${i} gives ${JSON.stringify(got)}`);
    }
  }
});

t.test('a header folded over 100,000 lines is refused at its 1,001st line, after 4 KiB', async (t) => {
  const bounds = headerBounds(102_400, 1000);
  const line = Buffer.from(' x\r\n');
  let fed = 0;
  let excess: HeaderExcess | null = null;
  for (let i = 0; i < 100_000 && !excess; i++) {
    excess = bounds.feed(i === 0 ? Buffer.from('Subject: a\r\n') : line);
    fed++;
  }
  t.same(excess, { bound: 'lines', max: 1000 });
  t.equal(fed, 1001);
  t.ok(bounds.done);
  t.equal(bounds.feed(line), null, 'nothing more is reported');
});
