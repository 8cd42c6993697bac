// A body that is the source's own bytes is stored once, as where it is in the source, and every
// reader (the detail, the webhook payload) gets exactly what the parser gave, before and after the
// retention purge drops the source.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { simpleParser } from 'mailparser';
import { analyze } from '../../src/inbound/analyze.js';
import { findSpan, readSpan, tailSpan } from '../../src/inbound/body-spans.js';
import { parseMessage } from '../../src/inbound/parse.js';
import { withBodies, type StoredParsed } from '../../src/inbound/received.js';
import { unquotedReply } from '../../src/inbound/stripped-reply.js';
import type { Lookup } from '../../src/inbound/verify.js';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, sendRaw, setup } from '../helpers/inbound.js';
import { anyMessage, longSinglePartMessage, multipartMessage, render, singlePartMessage } from '../helpers/mime-arbitrary.js';
import { holds } from '../helpers/property.js';

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

t.test('generated messages: what is stored, read back, is what the whole parse gives', async (t) => {
  // The analysis as the listener runs it (analyze.ts: verification, parsing, the bodies kept as
  // spans), then the reader's view of what was stored (received.ts withBodies), before and after
  // the purge puts the bodies back: every field mailparser's, from its parse of the whole message.
  // DNS answers nothing, so verification is quick and the same every time.
  const lookup: Lookup = () => Promise.reject(Object.assign(new Error('no such name'), { code: 'ENOTFOUND' }));
  let spans = 0;
  let tails = 0;
  const runs = await holds(
    t,
    'every body',
    fc.asyncProperty(
      fc.oneof(
        { weight: 2, arbitrary: longSinglePartMessage },
        { weight: 2, arbitrary: singlePartMessage },
        { weight: 2, arbitrary: multipartMessage },
        { weight: 1, arbitrary: anyMessage },
      ),
      // Now and then a body limit a long text is cut at.
      fc.oneof({ weight: 3, arbitrary: fc.constant(1 << 20) }, { weight: 1, arbitrary: fc.constant(2000) }),
      async (message, maxBodyBytes) => {
        const raw = render(message);
        const limits = { maxBodyBytes, maxParts: 100 };
        const analysis = await analyze(lookup, {
          raw,
          ip: '192.0.2.1',
          helo: 'client.example',
          mailFrom: 'alice@sender.example',
          mta: 'mx.postern.test',
          ...limits,
        });
        const stored = JSON.parse(analysis.parsedJson) as StoredParsed;
        if (stored.spans) spans++;
        const read = withBodies(stored, analysis.source);
        const { textAt, subject: _, partial: __, strippedReply, ...whole } = await parseMessage(raw, limits, { wholeParse: true });
        const { verdicts: ___, headersUtf8: ____, strippedReply: storedReply, ...got } = read;
        assert.deepStrictEqual(got, whole);
        assert.equal(storedReply ?? unquotedReply(read.text), strippedReply ?? unquotedReply(whole.text), 'the stripped reply');
        assert.deepStrictEqual(withBodies(JSON.parse(JSON.stringify(read)) as StoredParsed, null), read, 'after the purge');
        // A plain text part's span is taken without a search: it must be the one the search finds.
        const fast = await parseMessage(raw, limits);
        if (fast.textAt !== null) {
          const span = tailSpan(raw, fast.textAt, fast.text);
          assert.deepStrictEqual(span, findSpan(raw, fast.text), 'the span without a search');
          if (span) tails++;
        }
        assert.equal(textAt, null);
      },
    ),
    300,
  );
  t.ok(spans >= runs / 40, `bodies kept as spans in ${spans} of ${runs} (a fortieth at least)`);
  t.ok(tails >= runs / 100, `plain text parts kept as a span found without a search in ${tails} of ${runs} (one in a hundred at least)`);
});
