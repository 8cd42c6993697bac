// The composer's fast path (ASCII parts encoded by quoted-printable.ts, the census skipped) against
// its oracle: the same message composed by nodemailer alone. Over generated content of every shape
// the API accepts, the two must be byte for byte the same, headers and body (multipart boundaries
// are random per message and compared by position). A fast path that changed one byte of one
// message would fail here; one that dropped the headers (the text-only message with a long line)
// did.
import type { Transform } from 'node:stream';
import fc from 'fast-check';
import t from 'tap';
import { buildMime, composeMessage, crlfLineEndings, type ComposeInput, nodemailerBase64 } from '../../../src/channels/email/compose.js';
import { attachmentsArb, fromNameArb, htmlArb, subjectArb, textArb } from '../../helpers/content-shapes.js';
import { holds } from '../../helpers/property.js';

// Attachments at the edges of the base64 fast path's line arithmetic (one line, a full last line,
// one or two bytes over a multiple of three), and sent as base64 that is not canonical (cut into
// lines, as a mail client's export is): the fast path reads the bytes, not the text it was given.
const edgeAttachmentArb = fc
  .record({
    size: fc.constantFrom(1, 2, 3, 56, 57, 58, 59, 113, 114, 115, 116, 171, 57 * 20, 57 * 20 + 1, 57 * 20 + 2),
    seed: fc.integer({ min: 0, max: 255 }),
    contentType: fc.constantFrom('application/pdf', 'text/plain', 'image/png'),
    cut: fc.constantFrom(0, 60, 76),
  })
  .map(({ size, seed, contentType, cut }) => {
    const b64 = Buffer.from(Array.from({ length: size }, (_, i) => (seed + i * 31) & 255)).toString('base64');
    const content = cut ? (b64.match(new RegExp(`.{1,${cut}}`, 'g')) ?? []).join('\r\n') : b64;
    return { filename: 'edge.bin', contentType, content };
  });
const attachmentsOfEveryShapeArb = fc
  .tuple(attachmentsArb, fc.array(edgeAttachmentArb, { maxLength: 2 }))
  .map(([some, edges]) => [...some, ...edges]);

const inputArb: fc.Arbitrary<ComposeInput> = fc
  .record({
    subject: subjectArb,
    html: fc.option(htmlArb, { nil: '' }),
    text: fc.option(textArb, { nil: '' }),
    name: fromNameArb,
    cc: fc.constantFrom([], ['carol@example.net'], ['c1@example.net', 'Dave <d@example.org>']),
    replyTo: fc.constantFrom(null, 'reply@example.com'),
    attachments: attachmentsOfEveryShapeArb,
    unsubscribe: fc.boolean(),
  })
  .map((g) => ({
    from: { address: 'ann@acme.example', name: g.name },
    to: 'bob@example.net',
    cc: [...g.cc],
    replyTo: g.replyTo,
    subject: g.subject,
    html: g.html,
    text: g.text,
    attachments: g.attachments,
    messageId: '<msg_0123456789abcdef@mx.postern.test>',
    date: new Date('2030-01-02T03:04:05Z'),
    unsubscribeUrl: g.unsubscribe ? 'https://postern.example/u/token' : null,
  }));

/** Boundaries are random per message: number them in order of appearance. */
function sameBoundaries(raw: Buffer): string {
  const seen = new Map<string, string>();
  return raw.toString('latin1').replace(/--_NmP-[0-9a-f]+-Part_\d+/g, (b) => {
    if (!seen.has(b)) seen.set(b, `BOUNDARY${seen.size}`);
    return seen.get(b)!;
  });
}

t.test('the composer’s message is nodemailer’s, byte for byte, for every content shape', async (t) => {
  await holds(
    t,
    'fast path equals nodemailer alone',
    fc.asyncProperty(inputArb, async (input) => {
      const fast = sameBoundaries(await composeMessage(input));
      const plain = sameBoundaries(crlfLineEndings(await buildMime(input, { fast: false })));
      if (fast !== plain) throw new Error(`differs from nodemailer's own message:\n--- fast\n${fast}\n--- nodemailer\n${plain}`);
    }),
    300,
  );
});

t.test('a text-only message with a long ASCII line keeps its headers (the repro of issue 31)', async (t) => {
  const raw = (
    await composeMessage({
      from: { address: 'ann@acme.example', name: '' },
      to: 'bob@example.net',
      cc: [],
      replyTo: null,
      subject: 'long line',
      html: '',
      text: `short\n${'x'.repeat(80)}\nend`,
      attachments: [],
      messageId: '<m@acme.example>',
      date: new Date(0),
      unsubscribeUrl: null,
    })
  ).toString();
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
  for (const h of ['From', 'To', 'Subject', 'Date', 'Message-ID', 'MIME-Version', 'Content-Type', 'Content-Transfer-Encoding'])
    t.match(head, new RegExp(`^${h}: `, 'm'), `${h} is in the header block`);
  t.match(raw, /\r\n\r\nshort\r\nx{75}=\r\nxxxxx\r\nend/);
});

t.test('nodemailerBase64 is what nodemailer’s encoder writes for the bytes in one chunk', async (t) => {
  const { Encoder } = (await import('nodemailer/lib/base64/index.js')).default as unknown as {
    Encoder: new () => Transform;
  };
  const encoded = (bytes: Buffer) =>
    new Promise<string>((resolve, reject) => {
      const out: Buffer[] = [];
      const e = new Encoder();
      e.on('data', (c: Buffer) => out.push(c))
        .on('end', () => resolve(Buffer.concat(out).toString('latin1')))
        .on('error', reject);
      e.end(bytes);
    });
  await holds(
    t,
    'the same text for generated bytes',
    fc.asyncProperty(fc.uint8Array({ maxLength: 800 }), async (bytes) => {
      const b = Buffer.from(bytes);
      const [ours, theirs] = [nodemailerBase64(b), await encoded(b)];
      if (ours !== theirs) throw new Error(`${b.length} bytes:\n--- ours\n${ours}\n--- nodemailer\n${theirs}`);
    }),
    300,
  );
});
