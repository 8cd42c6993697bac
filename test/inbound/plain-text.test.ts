// A single plain text part is parsed for its header block only, and its text taken from the body
// (inbound/plain-text.ts). mailparser is the oracle: for every message the shortcut takes, its
// text, HTML and attachments must be exactly what mailparser gives parsing the whole message; and
// the shortcut must decline what mailparser would decode (charsets, quoted-printable, base64,
// flowed text, attachments, multipart).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { simpleParser } from 'mailparser';
import { plainTextShortcut } from '../../src/inbound/plain-text.js';
import { parseMessage } from '../../src/inbound/parse.js';
import { render, singlePartMessage } from '../helpers/mime-arbitrary.js';
import { holds } from '../helpers/property.js';

const OPTIONS = { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true } as const;

/** What the shortcut gives for a message: its text, or null when it declines. */
async function shortcut(raw: Buffer): Promise<string | null> {
  const end = raw.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const plain = await plainTextShortcut(raw, end, async (head) => ({ parsed: await simpleParser(head, OPTIONS) }));
  return plain?.text ?? null;
}

const TYPES = [
  null,
  'text/plain',
  'TEXT/PLAIN; CHARSET=UTF-8',
  'text/plain; charset="us-ascii"',
  'text/plain; charset=utf8',
  'text/plain;\r\n charset=utf-8',
  'text/plain; charset=iso-8859-1',
  'text/plain; charset=windows-1252',
  'text/plain; format=flowed',
  'text/plain; charset=utf-8; format=flowed; delsp=yes',
  'text/plain; name=notes.txt',
  'text/html; charset=utf-8',
  'application/octet-stream',
];
const ENCODINGS = [null, '7bit', '8BIT', 'binary', 'quoted-printable', 'base64', 'x-uuencode'];
const DISPOSITIONS = [null, 'inline', 'attachment; filename=a.txt'];
const BODIES: [string, Buffer][] = [
  ['ascii', Buffer.from('Hello,\r\n\r\nThe report is attached.\r\n-- \r\nBob\r\n')],
  ['utf-8', Buffer.from('Grüße aus Köln — 日本語のテキスト 🎉\r\nzweite Zeile\r\n')],
  ['invalid utf-8', Buffer.concat([Buffer.from('before '), Buffer.from([0xff, 0xc3, 0x28, 0xe2, 0x82]), Buffer.from(' after\r\n')])],
  ['latin-1 bytes', Buffer.from('caf\xe9 cr\xe8me\r\n', 'latin1')],
  ['empty', Buffer.alloc(0)],
  ['no final line end', Buffer.from('one line, no CRLF')],
  ['blank lines and dots', Buffer.from('\r\n\r\n..leading dots\r\n.\r\n\r\nend\r\n\r\n')],
  ['looks like MIME', Buffer.from('--boundary\r\nContent-Type: text/html\r\n\r\n<b>x</b>\r\n--boundary--\r\n')],
  ['quoted-printable looking', Buffer.from('a=3Db soft=\r\nbreak =E2=82=AC\r\n')],
  ['long line', Buffer.from('x'.repeat(5000) + '\r\n')],
  ['bare CR and LF', Buffer.from('a\rb\nc\r\n')],
];

function message(type: string | null, encoding: string | null, disposition: string | null, body: Buffer): Buffer {
  const head = [
    'From: "Alice Example" <alice@sender.example>',
    'To: inbox@acme.in.postern.test, =?utf-8?q?Bob_M=C3=BCller?= <bob@acme.in.postern.test>',
    'Subject: =?utf-8?b?w5xiZXIgZGVuIEJlcmljaHQ=?=',
    'Message-ID: <m1@sender.example>',
    'MIME-Version: 1.0',
    ...(type ? [`Content-Type: ${type}`] : []),
    ...(encoding ? [`Content-Transfer-Encoding: ${encoding}`] : []),
    ...(disposition ? [`Content-Disposition: ${disposition}`] : []),
  ];
  return Buffer.concat([Buffer.from(head.join('\r\n') + '\r\n\r\n', 'latin1'), body]);
}

t.test('the text taken from the body is mailparser’s, for every message the shortcut takes', async (t) => {
  let taken = 0;
  let declined = 0;
  for (const type of TYPES) {
    for (const encoding of ENCODINGS) {
      for (const disposition of DISPOSITIONS) {
        for (const [name, body] of BODIES) {
          const raw = message(type, encoding, disposition, body);
          const text = await shortcut(raw);
          const label = `${type ?? 'no type'} / ${encoding ?? 'no encoding'} / ${disposition ?? 'no disposition'} / ${name}`;
          if (text === null) {
            declined++;
            continue;
          }
          taken++;
          const full = await simpleParser(raw, OPTIONS);
          if (text !== (full.text ?? '')) t.fail(`${label}: text differs from mailparser's`);
          if (full.html) t.fail(`${label}: mailparser found HTML`);
          if (full.attachments.length) t.fail(`${label}: mailparser found an attachment`);
        }
      }
    }
  }
  // The shortcut takes what it should and leaves the rest: plain types × plain encodings × no
  // disposition, every body.
  t.equal(taken, 6 * 4 * BODIES.length, 'text/plain in UTF-8 or ASCII, 7bit/8bit/binary, no disposition');
  t.equal(declined, TYPES.length * ENCODINGS.length * DISPOSITIONS.length * BODIES.length - taken);
});

t.test('a second Content-Type or encoding header sends the message to the whole parse', async (t) => {
  const body = Buffer.from('body\r\n');
  const twice = Buffer.concat([Buffer.from('From: a@sender.example\r\nContent-Type: text/plain\r\nContent-Type: text/html\r\n\r\n'), body]);
  t.equal(await shortcut(twice), null);
  const encodings = Buffer.concat([
    Buffer.from('From: a@sender.example\r\nContent-Transfer-Encoding: 7bit\r\nContent-Transfer-Encoding: base64\r\n\r\n'),
    body,
  ]);
  t.equal(await shortcut(encodings), null);
});

t.test('parseMessage gives the same fields either way', async (t) => {
  const limits = { maxBodyBytes: 1 << 20, maxParts: 100 };
  const body = Buffer.from('Thanks!\r\n\r\nOn Monday Bob wrote:\r\n> the earlier message\r\n');
  const plain = await parseMessage(message('text/plain; charset=utf-8', '8bit', null, body), limits);
  // The same message that the glance turns away (a header naming format=, ignored by mailparser
  // for a type without it) goes through the whole parse.
  const whole = await parseMessage(
    Buffer.concat([Buffer.from('X-Note: format=none\r\n'), message('text/plain; charset=utf-8', '8bit', null, body)]),
    limits,
  );
  const { headers: h1, textAt: at1, ...a } = plain;
  const { headers: h2, textAt: at2, ...b } = whole;
  t.same(a, b);
  t.equal(at2, null, 'the whole parse does not say where the text is');
  const raw = message('text/plain; charset=utf-8', '8bit', null, body);
  t.equal(raw.subarray(at1!).toString(), body.toString(), 'the shortcut says where the body begins');
  t.same(h1, Object.fromEntries(Object.entries(h2).filter(([k]) => k !== 'x-note')));
  t.equal(plain.text, 'Thanks!\n\nOn Monday Bob wrote:\n> the earlier message\n');
  t.equal(plain.strippedReply, 'Thanks!');
});

t.test('generated single parts: parseMessage gives what the whole parse gives', async (t) => {
  // Single parts of every kind, most of them what the glance takes, and the fields next to it:
  // other charsets and encodings, format=flowed, dispositions, a field after a bare LF, bare LF
  // line ends, invalid UTF-8 and bare CR in the body, a text cut at the body limit.
  let taken = 0;
  const runs = await holds(
    t,
    'every field',
    fc.asyncProperty(singlePartMessage, fc.constantFrom(1 << 20, 100), async (message, maxBodyBytes) => {
      const raw = render(message);
      const limits = { maxBodyBytes, maxParts: 100 };
      if ((await shortcut(raw)) !== null) taken++;
      const { textAt: _, ...fast } = await parseMessage(raw, limits);
      const { textAt: __, ...whole } = await parseMessage(raw, limits, { wholeParse: true });
      assert.deepStrictEqual(fast, whole);
    }),
    300,
  );
  t.ok(taken >= runs / 10, `the glance took ${taken} of ${runs} (a tenth at least)`);
});

t.test(
  'a header block with a bare LF ends at the blank line after it, not at a CRLF CRLF in the body (found by the property)',
  async (t) => {
    const raw = Buffer.from(
      'From: Alice <alice@sender.example>\nTo: inbox@acme.in.postern.test\nSubject: Hello\nContent-Type: text/plain\n\nHello\r\n\r\nagain\r\n',
    );
    const limits = { maxBodyBytes: 1 << 20, maxParts: 100 };
    const fast = await parseMessage(raw, limits);
    t.equal(fast.text, 'Hello\n\nagain\n', "mailparser's text: the whole body");
    t.same(fast, { ...(await parseMessage(raw, limits, { wholeParse: true })), textAt: null }, 'the whole parse');
  },
);
