// A submitted message that is a single plain text part has only its header block parsed, its text
// taken from the body (submission/message.ts, with inbound/plain-text.ts). The whole parse by
// mailparser is the oracle: for every generated message, every field read must be what reading
// it with `wholeParse` gives.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { simpleParser } from 'mailparser';
import { endsHeaderBlock, plainTextShortcut } from '../../src/inbound/plain-text.js';
import { readSubmitted } from '../../src/submission/message.js';
import { anyMessage, render, singlePartMessage } from '../helpers/mime-arbitrary.js';
import { holds } from '../helpers/property.js';

const same = async (raw: Buffer) => assert.deepStrictEqual(await readSubmitted(raw), await readSubmitted(raw, { wholeParse: true }));

/** Whether the shortcut takes the message (the same decisions as submission/message.ts). */
async function taken(raw: Buffer): Promise<boolean> {
  const end = raw.indexOf('\r\n\r\n');
  if (end === -1 || !endsHeaderBlock(raw, end)) return false;
  const parse = (head: Buffer) =>
    simpleParser(head, { skipHtmlToText: true, skipTextToHtml: true }).then(
      (parsed) => ({ parsed }),
      () => null,
    );
  return (await plainTextShortcut(raw, end, parse)) !== null;
}

t.test('generated single parts: the shortcut reads what the whole parse reads', async (t) => {
  let took = 0;
  const runs = await holds(
    t,
    'single parts',
    fc.asyncProperty(singlePartMessage, async (m) => {
      const raw = render(m);
      if (await taken(raw)) took++;
      await same(raw);
    }),
    300,
  );
  t.ok(took >= runs / 10, `the shortcut took ${took} of ${runs} (a tenth at least)`);
});

t.test('generated messages of every shape: the same', async (t) => {
  await holds(
    t,
    'any message',
    fc.asyncProperty(anyMessage, async (m) => same(render(m))),
    150,
  );
});

t.test('the forms the shortcut takes and the ones it leaves', async (t) => {
  const head = (extra: string) =>
    `From: "App" <app@acme.example>\r\nTo: ann@example.com\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\nMessage-ID: <m1@acme.example>\r\nX-Postern-Metadata: {"order":"42"}\r\n${extra}\r\n`;
  const bodies = ['Hello\r\n\r\n-- \r\nApp\r\n', '', 'no final line end', 'x'.repeat(5000) + '\r\n', 'Grüße 🎉\r\n', 'a\rb\nc\r\n'];
  const forms = [
    '',
    'Content-Type: text/plain; charset=utf-8\r\n',
    'Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n',
    'Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n',
    'Content-Type: text/plain; format=flowed\r\n',
    'Content-Type: text/html; charset=utf-8\r\n',
    'Content-Disposition: attachment; filename=a.txt\r\n',
  ];
  for (const form of forms) for (const body of bodies) await same(Buffer.from(head(form) + body));
  // Found by the property: mailparser gives no text for an empty body, and neither does the shortcut.
  t.equal((await readSubmitted(Buffer.from(head('Content-Type: text/plain\r\n')))).text, null);
  const plain = await readSubmitted(Buffer.from(head('Content-Type: text/plain; charset=utf-8\r\n') + 'Hello\r\nthere\r\n'));
  t.equal(plain.text, 'Hello\nthere\n');
  t.equal(plain.subject, 'Grüße');
  t.same(plain.from, { address: 'app@acme.example', name: 'App' });
  t.equal(plain.messageId, 'm1@acme.example');
  t.same(plain.fields.metadata, { order: '42' });
  t.same(plain.attachments, []);
  t.equal(plain.html, null);
});
