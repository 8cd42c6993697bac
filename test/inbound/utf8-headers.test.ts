// SMTPUTF8 mail (RFC 6532) carries raw UTF-8 in its header fields. The received message's
// `headers` must read it as UTF-8, as its parsed `from` and `subject` do, on every way a message is
// parsed (the plain text glance, the multipart/alternative skeleton, the whole parse, the part
// limit, the headers-only fallback), and in the message.received payload. The end-to-end case is
// real: Debian's Postfix, with smtputf8_enable, relays the message to Postern as an MTA would.
import t from 'tap';
import { parseMessage } from '../../src/inbound/parse.js';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, sendRaw, setup } from '../helpers/inbound.js';
import { postfixUnavailable, startPostfix } from '../helpers/postfix.js';
import { tick } from '../helpers/webhooks.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

const LIMITS = { maxBodyBytes: 1 << 20, maxParts: 100 };

/** The header fields of the message, as sent (a folded one among them). */
const SENT: [string, string][] = [
  ['From', '"Ülrich Müller" <ülrich@bücher.example>'],
  ['To', 'Support <support+grüße@acme.in.postern.test>'],
  ['Subject', 'Grüße aus Köln — 日本語のテキスト 🎉'],
  ['Message-ID', '<ünï.1@bücher.example>'],
  ['Date', 'Mon, 02 Jan 2026 10:00:00 +0000'],
  ['MIME-Version', '1.0'],
  ['Content-Type', 'text/plain; charset=utf-8'],
  ['Content-Transfer-Encoding', '8bit'],
  ['X-Note', 'ça va,\r\n\tfolded over two lines: 日本'],
];
const BODY = 'Hallo 👋,\r\n\r\nnon-ASCII in the body too: ünïcödé.\r\n';
const source = (fields: [string, string][], body: string) =>
  Buffer.from(`${fields.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}`, 'utf8');
/** `headers` as the API shows SENT: lowercase names, folding undone. */
const expected = (fields: [string, string][]) =>
  Object.fromEntries(fields.map(([k, v]) => [k.toLowerCase(), v.replace(/\r\n[ \t]+/g, ' ')]));

for (const db of testDatabases()) {
  t.test(`SMTPUTF8 mail relayed by Postfix: headers, from and subject as sent (${db})`, async (t) => {
    const unavailable = postfixUnavailable();
    if (unavailable) {
      t.fail(`this test needs a real Postfix: ${unavailable}`);
      return;
    }
    const env = await setup(t, { db, env: { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    const { d } = env;
    const key = env.ws.live;
    const address = await createAddress(env, { localPart: 'support' });
    const hooks = await startReceiver();
    t.teardown(() => hooks.close());
    t.equal((await d.request('POST', '/v1/webhooks', { key, body: { url: hooks.url, events: ['message.received'] } })).status, 201);

    const postfix = await startPostfix({ relayPort: d.smtpPort, settings: ['smtputf8_enable = yes'] });
    t.teardown(() => postfix.stop());
    // Stored and committed: the receiver announces the message.received row after its commit.
    const arrived = new Promise<void>((resolve) => {
      const off = d.app.bus.subscribe('events.recorded', ({ type }) => {
        if (type !== 'message.received') return;
        off();
        resolve();
      });
    });
    const recipient = 'support+grüße@acme.in.postern.test';
    await postfix.sendmail(source(SENT, BODY), { from: 'ülrich@bücher.example', to: [recipient] });
    await Promise.race([arrived, postfix.failure()]);

    const list = (await d.request('GET', '/v1/inbound/messages', { key })).body.messages;
    t.equal(list.length, 1);
    t.equal(list[0].from, 'ülrich@bücher.example');
    t.equal(list[0].subject, 'Grüße aus Köln — 日本語のテキスト 🎉');
    const m = (await d.request('GET', `/v1/inbound/messages/${list[0].id}`, { key })).body;
    const { received, ...sent } = m.headers;
    t.same(sent, expected(SENT), 'every header field as sent, read as UTF-8');
    t.match(received, /^by postfix\.postern\.test \(Postfix, from userid 0\) id \w+; /, 'and the one Postfix added');
    t.same(m.from, { email: 'ülrich@bücher.example', name: 'Ülrich Müller' });
    t.same(m.to, [{ email: recipient, name: 'Support' }]);
    t.equal(m.subject, 'Grüße aus Köln — 日本語のテキスト 🎉');
    t.equal(m.messageId, '<ünï.1@bücher.example>');
    t.same(m.envelope, { from: 'ülrich@bücher.example', to: [recipient] }, 'the SMTPUTF8 envelope');
    t.equal(m.address, address.address);
    t.equal(m.plusTag, 'grüße');
    t.equal(m.text, BODY.replaceAll('\r\n', '\n'));
    const raw = await d.request('GET', `/v1/inbound/messages/${m.id}/raw`, { key });
    t.ok(Buffer.from(raw.body as string).includes(source(SENT, BODY)), 'the stored source holds the message byte for byte');
    t.match(
      raw.body,
      /^Received: from [^]*?by mx\.postern\.test \(Postern\) with UTF8SMTPS? id /m,
      'traced as an SMTPUTF8 transaction (RFC 6531)',
    );

    await tick(d);
    t.equal(hooks.requests.length, 1);
    t.same(hooks.requests[0].json.data, m, 'the message.received payload is the same detail');
  });
}

for (const db of testDatabases()) {
  t.test(`a message stored before headers were read as UTF-8 reads as UTF-8 (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d } = env;
    const key = env.ws.live;
    const a = await createAddress(env, { localPart: 'support' });
    const latin1 = Buffer.concat([Buffer.from('X-Latin1: caf'), Buffer.from([0xe9]), Buffer.from('\r\n')]);
    const raw = Buffer.concat([latin1, source(SENT, BODY)]);
    await sendRaw(d.smtpPort, { from: 'ulrich@sender.example', to: [a.address] }, raw);
    const [{ id }] = (await d.request('GET', '/v1/inbound/messages', { key })).body.messages;
    const row = () => d.app.db.selectFrom('received_messages').select('parsed').where('public_id', '=', id).executeTakeFirstOrThrow();
    const now = (await d.request('GET', `/v1/inbound/messages/${id}`, { key })).body;
    t.same(now.headers, { 'x-latin1': 'café', ...expected(SENT) });
    t.equal(JSON.parse((await row()).parsed).headersUtf8, true, 'a row stored now says how its headers were read');

    // What an earlier version stored: each header line one character per byte, and no marker.
    const { headersUtf8: _, ...parsed } = JSON.parse((await row()).parsed);
    const bytewise = (v: string) => Buffer.from(v, 'utf8').toString('latin1');
    parsed.headers = { ...parsed.headers, 'x-latin1': 'café' };
    for (const [k, v] of Object.entries(parsed.headers)) if (k !== 'x-latin1') parsed.headers[k] = bytewise(v as string);
    t.equal(parsed.headers.subject, 'GrÃ¼Ã\x9Fe aus KÃ¶ln â\x80\x94 æ\x97¥æ\x9C¬èª\x9Eã\x81®ã\x83\x86ã\x82­ã\x82¹ã\x83\x88 ð\x9F\x8E\x89');
    await d.app.db
      .updateTable('received_messages')
      .set({ parsed: JSON.stringify(parsed) })
      .where('public_id', '=', id)
      .execute();

    const before = (await d.request('GET', `/v1/inbound/messages/${id}`, { key })).body;
    t.same(before, now, 'read as a row stored now is');
    const payload = JSON.parse(await d.app.inbound.messages.eventPayload(JSON.stringify({ id })));
    t.same(payload.headers, now.headers, 'and so is the message.received payload');
  });
}

t.test('every way a message is parsed reads its header fields as UTF-8', async (t) => {
  const top = SENT.filter(([k]) => !/^content-/i.test(k));
  const check = async (label: string, raw: Buffer, limits = LIMITS) => {
    const p = await parseMessage(raw, limits);
    t.same(
      Object.fromEntries(Object.entries(p.headers).filter(([k]) => !k.startsWith('content-') && k !== 'x-pad')),
      expected(top),
      `${label}: headers`,
    );
    t.same(p.from, { email: 'ülrich@bücher.example', name: 'Ülrich Müller' }, `${label}: from`);
    t.equal(p.subject, 'Grüße aus Köln — 日本語のテキスト 🎉', `${label}: subject`);
    return p;
  };
  const plain = await check('a single plain text part', source(SENT, BODY));
  t.not(plain.textAt, null, 'taken by the plain text glance');

  const alternative = [
    'Content-Type: multipart/alternative; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Grüße',
    '--b1',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>Grüße</p>',
    '--b1--',
    '',
  ].join('\r\n');
  await check('multipart/alternative (the skeleton)', Buffer.concat([source(top, '').subarray(0, -2), Buffer.from(alternative)]));

  const mixed = (parts: number) =>
    Buffer.concat([
      source(top, '').subarray(0, -2),
      Buffer.from(
        [
          'Content-Type: multipart/mixed; boundary="m"',
          '',
          '--m',
          'Content-Type: text/plain; charset=utf-8',
          '',
          'see the files',
          ...Array.from({ length: parts }, (_, i) => [
            '--m',
            'Content-Type: application/octet-stream',
            `Content-Disposition: attachment; filename="größe-${i}.bin"`,
            '',
            'x',
          ]).flat(),
          '--m--',
          '',
        ].join('\r\n'),
      ),
    ]);
  const whole = await check('multipart/mixed (the whole parse)', mixed(2));
  t.same(
    whole.attachments.map((a) => a.filename),
    ['größe-0.bin', 'größe-1.bin'],
  );
  const cut = await check('more parts than the limit (parsed up to it)', mixed(5), { ...LIMITS, maxParts: 4 });
  t.match(cut.partial, /more than 4 MIME parts; parsed up to the limit/);
  // A header block over mailparser's 1 MiB: only the top-level headers are kept.
  const huge = source([...SENT, ['X-Pad', 'ü'.repeat(600_000)]], BODY);
  const headersOnly = await check('a header block the parser cannot take (headers only)', huge);
  t.match(headersOnly.partial, /kept the headers only/);
});

t.test('a header line that is not UTF-8 keeps one character per byte', async (t) => {
  // Legacy 8-bit mail is most often Latin-1 or windows-1252: read byte for byte, it reads right, and
  // nothing is lost or replaced.
  const raw = Buffer.concat([
    Buffer.from('From: a@sender.example\r\nSubject: caf', 'latin1'),
    Buffer.from([0xe9]),
    Buffer.from(' cr\xe8me\r\nX-Mixed: gr\xc3\xbc\xc3\x9fe and ', 'latin1'),
    Buffer.from([0xff]),
    Buffer.from('\r\nX-Utf8: gr\xc3\xbc\xc3\x9fe\r\nX-N\xc3\xa4me: v\r\n\r\nbody\r\n', 'latin1'),
  ]);
  const p = await parseMessage(raw, LIMITS);
  t.equal(p.headers.subject, 'café crème');
  t.equal(p.headers['x-mixed'], 'grÃ¼Ã\x9Fe and ÿ', 'one invalid byte: the whole line byte for byte');
  t.equal(p.headers['x-utf8'], 'grüße', 'a valid line beside it is UTF-8');
  t.equal(p.headers['x-näme'], 'v', 'and so is its name');
  t.equal(p.subject, 'caf\uFFFD cr\uFFFDme', "the parsed subject is mailparser's (U+FFFD for each invalid byte)");
});
