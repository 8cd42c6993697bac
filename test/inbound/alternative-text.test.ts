// multipart/alternative mail is parsed as a skeleton with its undecoded text bodies left out
// (inbound/alternative-text.ts). mailparser is the oracle: for every message the skeleton is used
// for, the text, HTML, headers and attachments must be exactly what mailparser gives parsing the
// whole message; and anything the skeleton could misread (delimiter look-alikes, trailing blanks,
// bare line feeds, nesting, a missing close) must go to the whole parse.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { simpleParser } from 'mailparser';
import { alternativeSkeleton, fillSkeleton } from '../../src/inbound/alternative-text.js';
import { parseMessage } from '../../src/inbound/parse.js';
import { multipartMessage, render } from '../helpers/mime-arbitrary.js';
import { holds } from '../helpers/property.js';

const OPTIONS = { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true } as const;

/** The skeleton's text and HTML for a message, or null when it goes to the whole parse. */
async function viaSkeleton(raw: Buffer) {
  const end = raw.indexOf('\r\n\r\n');
  const skeleton = end === -1 ? null : alternativeSkeleton(raw, end);
  if (!skeleton) return null;
  const parsed = await simpleParser(skeleton.bytes, OPTIONS);
  const filled = fillSkeleton(parsed, skeleton, raw);
  return filled && { ...filled, parsed };
}

const HEAD = [
  'From: "Alice Example" <alice@sender.example>',
  'To: inbox@acme.in.postern.test',
  'Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=',
  'Message-ID: <alt1@sender.example>',
  'MIME-Version: 1.0',
].join('\r\n');

function alternative(type: string, parts: string[], opts: { preamble?: string; epilogue?: string; close?: string } = {}): Buffer {
  const b = /boundary="?([^";]+)"?/.exec(type)![1];
  const body = parts.map((p) => `--${b}\r\n${p}\r\n`).join('') + (opts.close ?? `--${b}--\r\n`);
  return Buffer.from(`${HEAD}\r\nContent-Type: ${type}\r\n\r\n${opts.preamble ?? ''}${body}${opts.epilogue ?? ''}`, 'utf8');
}

const part = (headers: string, body: string) => `${headers}\r\n\r\n${body}`;
const TEXT = 'Grüße aus Köln — 日本語 🎉\r\nsecond line\r\n\r\n..dots and -- dashes\r\n--not a boundary\r\n';
const HTML = '<html><body><p>Grüße</p>\r\n<p>two &amp; three</p></body></html>';

const PART_HEADERS = [
  'Content-Type: text/plain; charset=utf-8',
  'Content-Type: text/plain; charset="UTF-8"\r\nContent-Transfer-Encoding: 8bit',
  'Content-Type: text/plain',
  'Content-Type: text/plain; charset=iso-8859-1',
  'Content-Type: text/plain; charset=utf-8; format=flowed',
  'Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable',
  'Content-Type: text/plain; charset=utf-8\r\nContent-Disposition: inline',
  'Content-Type: text/html; charset=utf-8',
  'Content-Type: text/html;\r\n charset=us-ascii',
  'Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64',
  'Content-Type: image/png; name=a.png\r\nContent-Transfer-Encoding: base64',
  'Content-Transfer-Encoding: 7bit',
];
const bodyFor = (h: string) => (/base64/.test(h) ? 'aGVsbG8gd29ybGQ=' : /html/.test(h) ? HTML : TEXT);

async function same(t: Test, raw: Buffer, label: string, expectSkeleton: boolean | null) {
  const got = await viaSkeleton(raw);
  if (expectSkeleton !== null) t.equal(got !== null, expectSkeleton, `${label}: ${expectSkeleton ? 'skeleton' : 'whole parse'}`);
  if (!got) return;
  const full = await simpleParser(raw, OPTIONS);
  t.equal(got.text, full.text ?? '', `${label}: text`);
  t.equal(got.html, typeof full.html === 'string' ? full.html : '', `${label}: html`);
  t.same(got.parsed.headerLines, full.headerLines, `${label}: headers`);
  t.same(
    got.parsed.attachments.map((a) => [a.filename, a.contentType, a.size]),
    full.attachments.map((a) => [a.filename, a.contentType, a.size]),
    `${label}: attachments`,
  );
}

t.test('every pair of parts: the skeleton gives what the whole parse gives', async (t) => {
  let used = 0;
  for (const a of PART_HEADERS) {
    for (const b of PART_HEADERS) {
      const raw = alternative('multipart/alternative; boundary="b1"', [part(a, bodyFor(a)), part(b, bodyFor(b))]);
      if (await viaSkeleton(raw)) used++;
      await same(t, raw, `${a} + ${b}`, null);
    }
  }
  t.ok(used > 50, `the skeleton is used for most pairs (${used})`);
});

t.test('forms the skeleton takes', async (t) => {
  const text = part('Content-Type: text/plain; charset=utf-8', TEXT);
  const html = part('Content-Type: text/html; charset=utf-8', HTML);
  await same(t, alternative('multipart/alternative; boundary="b1"', [text, html]), 'quoted boundary', true);
  await same(t, alternative('multipart/alternative; boundary=b1', [text, html]), 'bare boundary', true);
  await same(t, alternative('multipart/alternative;\r\n\tboundary="Apple-Mail=_1A2B"', [text, html]), 'folded, = in it', true);
  await same(
    t,
    alternative('multipart/alternative; boundary="b1"', [text, html], { preamble: 'This is a MIME message.\r\n' }),
    'preamble',
    true,
  );
  await same(
    t,
    alternative('multipart/alternative; boundary="b1"', [text, html], { epilogue: 'after the end\r\n--b1\r\n' }),
    'a delimiter after the close',
    false,
  );
  await same(t, alternative('multipart/alternative; boundary="b1"', [text, html], { epilogue: 'after the end\r\n' }), 'epilogue', true);
  await same(t, alternative('multipart/alternative; boundary="b1"', [text]), 'one part', true);
  await same(t, alternative('multipart/alternative; boundary="b1"', [text, part('Content-Type: text/html', '')]), 'an empty part', true);
});

t.test('what the skeleton leaves to the whole parse', async (t) => {
  const text = part('Content-Type: text/plain; charset=utf-8', TEXT);
  const html = part('Content-Type: text/html; charset=utf-8', HTML);
  const cases: [string, Buffer][] = [
    [
      'trailing blanks on a delimiter',
      Buffer.from(
        alternative('multipart/alternative; boundary="b1"', [text, html])
          .toString()
          .replace('--b1\r\nContent-Type: text/html', '--b1  \r\nContent-Type: text/html'),
      ),
    ],
    [
      'a line that begins with the delimiter',
      alternative('multipart/alternative; boundary="b1"', [part('Content-Type: text/plain', 'x\r\n--b1x\r\n'), html]),
    ],
    [
      'a delimiter after a bare LF',
      Buffer.from(
        alternative('multipart/alternative; boundary="b1"', [text, html])
          .toString()
          .replace('\r\n--b1\r\nContent-Type: text/html', '\n--b1\r\nContent-Type: text/html'),
      ),
    ],
    ['no close delimiter', alternative('multipart/alternative; boundary="b1"', [text, html], { close: '' })],
    [
      'nested multipart',
      alternative('multipart/alternative; boundary="b1"', [
        text,
        part('Content-Type: multipart/related; boundary="b2"', `--b2\r\n${html}\r\n--b2--`),
      ]),
    ],
    ['multipart/mixed', alternative('multipart/mixed; boundary="b1"', [text, html])],
    ['a second parameter', alternative('multipart/alternative; boundary="b1"; charset=utf-8', [text, html])],
    ['a part without headers', alternative('multipart/alternative; boundary="b1"', ['\r\nplain', html])],
    [
      'nothing to leave out',
      alternative('multipart/alternative; boundary="b1"', [part('Content-Type: text/plain; charset=iso-8859-1', 'caf\u00e9')]),
    ],
  ];
  for (const [label, raw] of cases) await same(t, raw, label, false);
});

t.test('parseMessage: the same fields as the whole parse', async (t) => {
  const limits = { maxBodyBytes: 1 << 20, maxParts: 100 };
  const body = 'Thanks!\r\n\r\nOn Monday Bob wrote:\r\n> the earlier message\r\n';
  const parts = [part('Content-Type: text/plain; charset=utf-8', body), part('Content-Type: text/html; charset=utf-8', '<p>Thanks!</p>')];
  const raw = alternative('multipart/alternative; boundary="b1"', parts);
  // The same message with a second parameter the skeleton does not take goes through the whole parse.
  const whole = alternative('multipart/alternative; boundary="b1"; x-note=1', parts);
  t.ok(await viaSkeleton(raw));
  t.notOk(await viaSkeleton(whole));
  const a = await parseMessage(raw, limits);
  const b = await parseMessage(whole, limits);
  t.same({ ...a, headers: {} }, { ...b, headers: {} });
  t.equal(a.text, 'Thanks!\n\nOn Monday Bob wrote:\n> the earlier message\n');
  t.equal(a.html, '<p>Thanks!</p>');
  t.equal(a.strippedReply, 'Thanks!');
});

t.test('generated multipart messages: parseMessage gives what the whole parse gives', async (t) => {
  // Multiparts, most of them one level of text and HTML parts the skeleton takes, with the fields
  // and delimiters next to it: other charsets and encodings, nested parts, attachments, a field
  // after a bare LF, padded and missing delimiters, look-alikes in bodies, the part limit.
  let used = 0;
  const runs = await holds(
    t,
    'every field',
    fc.asyncProperty(multipartMessage, fc.constantFrom(100, 3), async (message, maxParts) => {
      const raw = render(message);
      const limits = { maxBodyBytes: 1 << 20, maxParts };
      if (await viaSkeleton(raw)) used++;
      assert.deepStrictEqual(await parseMessage(raw, limits), await parseMessage(raw, limits, { wholeParse: true }));
    }),
    300,
  );
  t.ok(used >= runs / 40, `the skeleton was used for ${used} of ${runs} (a fortieth at least)`);
});

t.test('a field after a bare LF in a part’s header block sends the message to the whole parse (found by the property)', async (t) => {
  // mailparser reads the field after the bare LF; splitting lines at CRLF alone took it for the end
  // of the value before it, and left the part's body undecoded.
  const limits = { maxBodyBytes: 1 << 20, maxParts: 100 };
  for (const [hidden, body, text] of [
    ['Content-Type: text/plain; charset=iso-8859-1', 'é', 'Ã©'],
    ['Content-Transfer-Encoding: quoted-printable', '=E2=82=AC', '€'],
  ]) {
    const raw = alternative('multipart/alternative; boundary=b1', [
      part(`Content-Description: a part\n${hidden}\r\nContent-Type: text/plain`, body),
    ]);
    await same(t, raw, hidden, false);
    const fast = await parseMessage(raw, limits);
    t.equal(fast.text, text, `${hidden}: mailparser's text`);
    t.same(fast, await parseMessage(raw, limits, { wholeParse: true }), `${hidden}: the whole parse`);
  }
});
