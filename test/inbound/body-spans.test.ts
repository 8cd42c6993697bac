// A body that is the source's own bytes is stored once, as where it is in the source, and every
// reader (the detail, the webhook payload) gets exactly what the parser gave, before and after the
// retention purge drops the source.
import t from 'tap';
import { simpleParser } from 'mailparser';
import { findSpan, readSpan, tailSpan } from '../../src/inbound/body-spans.js';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, sendRaw, setup } from '../helpers/inbound.js';

const DAY = 24 * 3600 * 1000;
const PARSE = { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true } as const;

// Long lines with multi-byte characters, a quoted history and a line of dots (dot-stuffed on the wire).
const story = Array.from({ length: 60 }, (_, i) => `Zeile ${i}: grüße, ünïcödé, 日本語 and a 😀, again and again.`).join('\r\n');
const plainBody = `${story}\r\n.\r\n..leading dots\r\n\r\nOn Mon, 2 Jan 2026 Bob wrote:\r\n> the question\r\n> more\r\n`;

function plain(to: string): string {
  return [
    'From: Alice <alice@sender.example>',
    `To: ${to}`,
    'Subject: plain',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    plainBody,
  ].join('\r\n');
}

function alternative(to: string): string {
  return [
    'From: Alice <alice@sender.example>',
    `To: ${to}`,
    'Subject: alternative',
    'MIME-Version: 1.0',
    'Content-Type: multipart/alternative; boundary="b"',
    '',
    '--b',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'plain part line\r\n'.repeat(100),
    '--b',
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    `<p>${'caf=C3=A9 '.repeat(200)}</p>`,
    '--b--',
    '',
  ].join('\r\n');
}

t.test('spans: found where the bytes are, read back exactly, refused where they are not', async (t) => {
  const raw = Buffer.from(`Subject: x\r\n\r\n${plainBody}`);
  const text = plainBody.replaceAll('\r\n', '\n');
  const span = findSpan(raw, text)!;
  t.ok(span, 'found');
  t.equal(readSpan(raw, span), text);
  const prefixed = Buffer.concat([Buffer.from('Authentication-Results: x; spf=pass\r\n'), raw]);
  t.equal(readSpan(prefixed, span), text, 'counted from the end: prepended headers do not move it');

  t.equal(findSpan(raw, 'short\n'), null, 'short bodies stay inline');
  t.equal(findSpan(raw, text.replace('Zeile 3', 'Zeile 9')), null, 'bytes that are not in the source');
  t.equal(findSpan(Buffer.from(`\r\n${story}\r\n`.replace('\r\n', '\r\r\n')), `\r${story}`), null, 'a carriage return');
  t.equal(findSpan(raw, text + '\uD800'), null, 'a lone surrogate');
  const lf = Buffer.from(`Subject: x\n\n${plainBody.replaceAll('\r\n', '\n')}`);
  t.equal(findSpan(lf, text), null, 'a source with bare LF line ends');
  t.throws(() => readSpan(raw, { fromEnd: raw.length + 1, bytes: 1 }), /outside its source/);
  t.throws(() => readSpan(raw, { fromEnd: 2, bytes: 3 }), /outside its source/);
});

for (const db of testDatabases()) {
  t.test(`a body stored once reads as parsed, before and after the purge (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d } = env;
    const key = env.ws.live;
    const a = await createAddress(env, { localPart: 'spans' });
    const start = d.clock.now().getTime();
    const sent = [plain(a.address), alternative(a.address)];
    for (const [i, raw] of sent.entries()) {
      d.clock.set(start + i * 1000);
      await sendRaw(d.smtpPort, { from: 'alice@sender.example', to: [a.address] }, raw);
    }
    const list = (await d.request('GET', '/v1/inbound/messages', { key })).body.messages.reverse();
    t.equal(list.length, 2);
    const detail = async (id: string) => (await d.request('GET', `/v1/inbound/messages/${id}`, { key })).body;
    const stored = async (id: string) =>
      JSON.parse(
        (await d.app.db.selectFrom('received_messages').select('parsed').where('public_id', '=', id).executeTakeFirstOrThrow()).parsed,
      );

    const expected = await Promise.all(sent.map((raw) => simpleParser(Buffer.from(raw), PARSE)));
    const [p0, p1] = [await stored(list[0].id), await stored(list[1].id)];
    t.equal(p0.text, '', 'the plain body is not stored twice');
    t.ok(p0.spans.text.bytes > 4000);
    t.equal(p1.text, '', 'the 7bit text part of an alternative');
    t.equal(p1.spans.html, undefined, 'a quoted-printable part stays inline');
    t.match(p1.html, /café/);

    for (const [i, m] of list.entries()) {
      const got = await detail(m.id);
      t.equal(got.text, expected[i].text, `${m.subject}: the text as parsed`);
      t.equal(got.html, expected[i].html || '', `${m.subject}: the html as parsed`);
      const payload = JSON.parse(await d.app.inbound.messages.eventPayload(JSON.stringify({ id: m.id })));
      t.equal(payload.text, expected[i].text, `${m.subject}: the webhook payload`);
    }
    const before = await detail(list[0].id);
    t.equal(before.strippedReply, story.replaceAll('\r\n', '\n') + '\n.\n..leading dots', 'the reply is derived from the read text');

    // The purge puts the body back before it drops the source.
    d.clock.set(start + 31 * DAY);
    t.equal(await d.app.inbound.messages.purge(), 2);
    const after = await detail(list[0].id);
    t.same(after, before, 'the detail is unchanged once the source is gone');
    const p0after = await stored(list[0].id);
    t.equal(p0after.spans, undefined);
    t.equal(p0after.text, expected[0].text);
    t.equal((await detail(list[1].id)).text, expected[1].text);
    t.equal((await d.request('GET', `/v1/inbound/messages/${list[0].id}/raw`, { key })).status, 410);
  });
}

t.test('a plain body’s span without a search is the one the search finds', async (t) => {
  // tailSpan trusts that the text was decoded from the whole rest of the source (plain-text.ts);
  // for every such body it must answer as findSpan does.
  const head = Buffer.from('From: a@sender.example\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n');
  const long = (s: string) => s.repeat(Math.ceil(1200 / s.length));
  const bodies: [string, Buffer][] = [
    ['ascii', Buffer.from(long('plain words, line after line\r\n'))],
    ['utf-8', Buffer.from(long('grüße 日本語 😀\r\n'))],
    ['no final line end', Buffer.from(long('x') + '\r\nlast')],
    ['invalid utf-8', Buffer.concat([Buffer.from(long('y')), Buffer.from([0xff, 0xfe]), Buffer.from('\r\n')])],
    ['bare LF', Buffer.from(long('a\nb\r\n'))],
    ['bare CR', Buffer.from(long('a\rb\r\n'))],
    ['CR at the end', Buffer.from(long('z') + '\r')],
    ['short', Buffer.from('short body\r\n')],
    ['2-byte characters below 1,024 of them', Buffer.from('é'.repeat(700) + '\r\n')],
  ];
  const spans: string[] = [];
  for (const [name, body] of bodies) {
    const raw = Buffer.concat([head, body]);
    const text = (await simpleParser(raw, PARSE)).text ?? '';
    const span = tailSpan(raw, head.length, text);
    t.same(span, findSpan(raw, text), name);
    if (span) t.equal(readSpan(raw, span), text, `${name}: reads back as the text`);
    spans.push(span ? name : `(${name})`);
  }
  t.same(
    spans,
    [
      'ascii',
      'utf-8',
      'no final line end',
      '(invalid utf-8)',
      '(bare LF)',
      '(bare CR)',
      '(CR at the end)',
      '(short)',
      '(2-byte characters below 1,024 of them)',
    ],
    'kept as spans: the bodies that read back exactly',
  );
});
