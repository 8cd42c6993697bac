// The composer's own quoted-printable encoder (ASCII text with long lines): every encoded line
// within 76 characters, no escape split by a soft break, no bare whitespace at a line's end, and a
// message that mailparser decodes back to the exact html and text.
import { simpleParser } from 'mailparser';
import t from 'tap';
import { composeMessage, quotedPrintableAscii } from '../../../src/channels/email/compose.js';

const decode = (qp: string) => qp.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));

t.test('quoted-printable of ASCII round-trips within the line limit', async (t) => {
  // A deterministic spread of inputs: '=' and whitespace near every cut position, mixed line ends.
  const alphabet = 'abcdefghij=  \t.<>';
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  let failures = 0;
  for (let i = 0; i < 500; i++) {
    let s = '';
    const n = rnd(600);
    for (let j = 0; j < n; j++) s += rnd(40) === 0 ? ['\n', '\r\n', '\r'][rnd(3)] : alphabet[rnd(alphabet.length)];
    const enc = quotedPrintableAscii(s);
    const lines = enc.split('\r\n');
    if (lines.some((l) => l.length > 76 || /[ \t]$/.test(l) || /=(?![0-9A-F]{2})(?!$)/.test(l))) failures++;
    else if (decode(enc) !== s.replace(/\r\n|\r|\n/g, '\r\n')) failures++;
  }
  t.equal(failures, 0, 'every input encodes validly and decodes back');
  t.equal(quotedPrintableAscii('a=b'), 'a=3Db');
  t.equal(quotedPrintableAscii('end \nnext\t'), 'end=20\r\nnext=09');
  t.equal(quotedPrintableAscii('x'.repeat(74) + '=='), 'x'.repeat(74) + '=\r\n=3D=3D', 'an escape is moved whole to the next line');
});

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
