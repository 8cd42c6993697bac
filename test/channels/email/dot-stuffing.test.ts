// The SMTP client's dot-stuffing fast path against its oracle: nodemailer's own DataStream, fed the
// same generated message cut into the same generated chunks. Bytes, counts and the final dot must be
// the same; the alphabet is the bytes the rule looks at (dots, CR, LF, NUL) and a letter.
import { createRequire } from 'node:module';
import type { Transform, TransformCallback } from 'node:stream';
import fc from 'fast-check';
import t from 'tap';
import { dotStuffed, fastDotStuffing } from '../../../src/channels/email/dot-stuffing.js';
import { holds } from '../../helpers/property.js';

type Transformer = (this: Transform, chunk: Buffer, encoding: BufferEncoding, done: TransformCallback) => void;
interface DataStream extends Transform {
  inByteCount: number;
  outByteCount: number;
}

const DataStream = createRequire(import.meta.url)('nodemailer/lib/smtp-connection/data-stream.js') as {
  new (): DataStream;
  prototype: { _transform: Transformer };
};
const original = DataStream.prototype._transform;
fastDotStuffing();
const fast = DataStream.prototype._transform;

async function sent(transform: Transformer, chunks: Buffer[]) {
  const s = new DataStream();
  s._transform = transform;
  const out: Buffer[] = [];
  s.on('data', (c: Buffer) => out.push(c));
  const ended = new Promise((resolve) => s.on('end', resolve));
  for (const c of chunks) s.write(c);
  s.end();
  await ended;
  return { bytes: Buffer.concat(out).toString('latin1'), in: s.inByteCount, out: s.outByteCount };
}

const messageArb = fc.array(fc.constantFrom(0x2e, 0x2e, 0x0d, 0x0a, 0x0a, 0x00, 0x61), { maxLength: 300 }).chain((bytes) =>
  fc.record({
    bytes: fc.constant(Buffer.from(bytes)),
    cuts: fc.uniqueArray(fc.integer({ min: 0, max: bytes.length }), { maxLength: 6 }),
  }),
);

t.test('the transform is installed once, in DataStream’s place', async (t) => {
  t.not(fast, original);
  fastDotStuffing();
  t.equal(DataStream.prototype._transform, fast);
});

t.test('generated messages in generated chunks: what nodemailer’s DataStream sends, byte for byte', async (t) => {
  await holds(
    t,
    'the same bytes and counts',
    fc.asyncProperty(messageArb, async ({ bytes, cuts }) => {
      const at = [0, ...[...cuts].sort((a, b) => a - b), bytes.length];
      const chunks = at.slice(1).map((end, i) => bytes.subarray(at[i], end));
      const [ours, theirs] = [await sent(fast, chunks), await sent(original, chunks)];
      if (JSON.stringify(ours) !== JSON.stringify(theirs))
        throw new Error(
          `differs:\n${JSON.stringify(ours)}\n${JSON.stringify(theirs)}\nfrom ${JSON.stringify(chunks.map((c) => c.toString('latin1')))}`,
        );
    }),
    500,
  );
});

t.test('a chunk with nothing to change is sent as it is', async (t) => {
  const chunk = Buffer.from('Subject: x\r\n\r\nno dots here\r\n');
  t.equal(dotStuffed(chunk, 0x0a), chunk);
  t.equal(dotStuffed(Buffer.from('.a\r\n'), 0x0a).toString(), '..a\r\n');
  t.equal(dotStuffed(Buffer.from('.a\n.b'), 0x61).toString(), '.a\r\n..b');
});
