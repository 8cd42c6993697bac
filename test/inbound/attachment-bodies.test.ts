// Mail with files attached is parsed as a skeleton without the files' base64 (inbound/attachment-
// bodies.ts). mailparser is the oracle: for every message, parseMessage must give exactly the
// fields mailparser's parse of the whole message gives, attachment sizes included; and what the
// skeleton could misread (base64 that is not strict, a text part in base64, a look-alike line
// after a body, a part mailparser reads as something else) must come out the same.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { simpleParser } from 'mailparser';
import { attachmentSkeleton, fillAttachments, strictBase64Size } from '../../src/inbound/attachment-bodies.js';
import { parseMessage } from '../../src/inbound/parse.js';
import { message } from '../../bench/smtp-client.js';
import { attachmentMessage, render } from '../helpers/mime-arbitrary.js';
import { holds } from '../helpers/property.js';

const OPTIONS = { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true } as const;
const LIMITS = { maxBodyBytes: 1 << 20, maxParts: 100 };

/** Whether the skeleton is what parseMessage uses for this message. */
async function usesSkeleton(raw: Buffer): Promise<boolean> {
  const end = raw.indexOf('\r\n\r\n');
  const skeleton = end === -1 ? null : attachmentSkeleton(raw, end);
  return !!skeleton && fillAttachments(await simpleParser(skeleton.bytes, OPTIONS), skeleton) !== null;
}

async function same(t: Test, raw: Buffer, label: string, expectSkeleton: boolean) {
  t.equal(await usesSkeleton(raw), expectSkeleton, `${label}: ${expectSkeleton ? 'skeleton' : 'whole parse'}`);
  t.same(await parseMessage(raw, LIMITS), await parseMessage(raw, LIMITS, { wholeParse: true }), `${label}: the same fields`);
}

const HEAD =
  'From: Alice <alice@sender.example>\r\nTo: inbox@acme.in.postern.test\r\nSubject: the report\r\nMessage-ID: <f1@sender.example>\r\nMIME-Version: 1.0\r\n';
const TEXT = 'Content-Type: text/plain; charset=utf-8\r\n\r\nThe report is attached.\r\n';
const wrap = (b64: string, width = 76) => (b64.match(new RegExp(`.{1,${width}}`, 'g')) ?? []).join('\r\n');

function mixed(...parts: string[]): Buffer {
  return Buffer.from(
    `${HEAD}Content-Type: multipart/mixed; boundary="m1"\r\n\r\n${parts.map((p) => `--m1\r\n${p}\r\n`).join('')}--m1--\r\n`,
    'latin1',
  );
}
const file = (
  body: string,
  headers = 'Content-Type: application/pdf; name="report.pdf"\r\nContent-Disposition: attachment; filename="report.pdf"\r\nContent-Transfer-Encoding: base64',
) => `${headers}\r\n\r\n${body}`;

t.test('strictBase64Size is the decoded length of strict base64, null for anything else', async (t) => {
  await holds(
    t,
    'every length and line width',
    fc.property(fc.uint8Array({ maxLength: 400 }), fc.constantFrom(4, 64, 76, 1000), (bytes, width) => {
      const text = wrap(Buffer.from(bytes).toString('base64'), width);
      const raw = Buffer.from(`x${text}y`, 'latin1');
      assert.equal(strictBase64Size(raw, 1, raw.length - 1), bytes.length);
    }),
    300,
  );
  const size = (s: string) => strictBase64Size(Buffer.from(s, 'latin1'), 0, s.length);
  t.equal(size('aGVsbG8='), 5);
  t.equal(size('aGVs\r\nbG8='), 5, 'CRLF between lines');
  t.equal(size(''), 0);
  for (const bad of [
    'aGVsbG8',
    'aGVs\nbG8=',
    'aGVs\rbG8=',
    'aG=sbG8=',
    'aGVsbG8===',
    'aGVs bG8=',
    'aGVsbG8=\r\n\r\nx',
    'aGVs-G8=',
    'aGVsbA==bA==',
  ])
    t.equal(size(bad), null, JSON.stringify(bad));
});

t.test('a PDF attached beside text and quoted-printable HTML (the benchmark’s message)', async (t) => {
  for (const size of [2 * 1024, 50 * 1024, 1024 * 1024]) {
    const raw = message(size, 'inbox@acme.in.postern.test', 'mixed');
    await same(t, raw, `${size} bytes`, true);
    const fields = await parseMessage(raw, LIMITS);
    t.match(fields.attachments, [{ index: 0, filename: 'report.pdf', contentType: 'application/pdf' }]);
    t.ok(fields.html.includes('<table>'), 'the quoted-printable HTML is decoded');
  }
});

t.test('forms the skeleton takes', async (t) => {
  const pdf = randomBytes(5000);
  const b64 = pdf.toString('base64');
  await same(t, mixed(TEXT, file(wrap(b64))), 'one file', true);
  await same(
    t,
    mixed(
      TEXT,
      file(wrap(b64)),
      file(wrap(randomBytes(301).toString('base64')), 'Content-Type: image/png\r\nContent-Transfer-Encoding: BASE64'),
    ),
    'two files, one without a disposition',
    true,
  );
  await same(t, mixed(TEXT, file(b64)), 'one long line', true);
  await same(t, mixed(TEXT, file(wrap(b64, 64))), '64 columns', true);
  await same(t, mixed(TEXT, file(`${wrap(b64)}\r\n`)), 'a blank line after the body', true);
  await same(
    t,
    mixed(
      TEXT,
      file(wrap(b64), 'Content-Type: text/plain; name="notes.txt"\r\nContent-Disposition: attachment\r\nContent-Transfer-Encoding: base64'),
    ),
    'a text file as an attachment',
    true,
  );
  const nested = Buffer.from(
    `${HEAD}Content-Type: multipart/mixed; boundary="m1"\r\n\r\n--m1\r\nContent-Type: multipart/alternative; boundary="a1"\r\n\r\n--a1\r\n${TEXT}\r\n--a1--\r\n\r\n--m1\r\n${file(wrap(b64))}\r\n--m1--\r\n`,
    'latin1',
  );
  await same(t, nested, 'beside a nested alternative', true);
  const size = (await parseMessage(mixed(TEXT, file(wrap(b64))), LIMITS)).attachments[0].size;
  t.equal(size, 5000, 'the size is the decoded size');
});

t.test('what is left to the whole parse', async (t) => {
  const b64 = wrap(randomBytes(3000).toString('base64'));
  const cases: [string, Buffer][] = [
    [
      'a text part in base64 (mailparser decodes it into the text)',
      mixed(file(b64.replace(/[^A-Za-z0-9+/=\r\n]/g, ''), 'Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64')),
    ],
    ['base64 with a bare LF', mixed(TEXT, file(b64.replace('\r\n', '\n')))],
    ['base64 with a character outside the alphabet', mixed(TEXT, file(b64.replace('A', '*')))],
    ['padding in the middle', mixed(TEXT, file(`aGVsbA==\r\n${b64}`))],
    ['a line that begins with -- but is no delimiter, after the body', mixed(TEXT, file(`${b64}\r\n--not-the-boundary\r\nQUJD`))],
    ['quoted-printable', mixed(TEXT, file('=E2=82=AC', 'Content-Type: application/pdf\r\nContent-Transfer-Encoding: quoted-printable'))],
    ['a message part', mixed(TEXT, file(b64, 'Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64'))],
    [
      'two encodings',
      mixed(TEXT, file(b64, 'Content-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\nContent-Transfer-Encoding: 7bit')),
    ],
  ];
  for (const [label, raw] of cases) await same(t, raw, label, false);
  // Not a part at all: a base64 body in the epilogue is nothing mailparser lists.
  const epilogue = Buffer.concat([mixed(TEXT), Buffer.from(`--m1\r\n${file(b64)}\r\n--x\r\n`, 'latin1')]);
  await same(t, epilogue, 'a part after the close delimiter', false);
});

t.test('generated mail with files: parseMessage gives what the whole parse gives', async (t) => {
  let used = 0;
  const runs = await holds(
    t,
    'every field',
    fc.asyncProperty(attachmentMessage, fc.constantFrom(100, 3), async (m, maxParts) => {
      const raw = render(m);
      const limits = { maxBodyBytes: 1 << 20, maxParts };
      if (await usesSkeleton(raw)) used++;
      assert.deepStrictEqual(await parseMessage(raw, limits), await parseMessage(raw, limits, { wholeParse: true }));
    }),
    300,
  );
  t.ok(used >= runs / 5, `the skeleton was used for ${used} of ${runs} (a fifth at least)`);
});
