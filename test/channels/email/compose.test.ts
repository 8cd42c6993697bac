// A long-line html part leaves as quoted-printable within the line limit and parses back exactly
// (the fast path itself is held to nodemailer by compose-oracle.test.ts).
import { simpleParser } from 'mailparser';
import t from 'tap';
import { composeMessage } from '../../../src/channels/email/compose.js';

t.test('a long-line html part is quoted-printable and parses back exactly', async (t) => {
  const html = `<p>${'Lorem ipsum = dolor sit amet, '.repeat(300)}</p>  `;
  const raw = await composeMessage({
    from: { address: 'a@example.com', name: 'A' },
    to: 'b@example.net',
    cc: [],
    replyTo: null,
    subject: 'hi',
    html,
    text: 'short text',
    attachments: [],
    messageId: '<m@example.com>',
    date: new Date(0),
    unsubscribeUrl: null,
  });
  t.match(raw.toString(), /Content-Type: text\/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n/);
  t.ok(
    raw
      .toString()
      .split('\r\n')
      .every((l) => l.length <= 78),
    'no line over 78 characters',
  );
  const parsed = await simpleParser(raw);
  t.equal(parsed.html, html);
  t.equal(parsed.text, 'short text');
});
