// Header values that read back as what was sent (src/channels/email/header-values.ts), decided
// case by case; the whole-message property test (test/e2e/whole-message.test.ts) holds them to
// Python's reading over generated content.
import t from 'tap';
import { encodedWords, foldField, mailbox, parameter, subjectValue } from '../../../src/channels/email/header-values.js';

const decode = (words: string) =>
  words
    .split(' ')
    .map((w) => {
      const [, , enc, data] = /^=\?([^?]+)\?([QB])\?(.*)\?=$/.exec(w)!;
      if (enc === 'B') return Buffer.from(data, 'base64');
      return Buffer.from(
        data.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
        'latin1',
      );
    })
    .reduce((a, b) => Buffer.concat([a, b]), Buffer.alloc(0))
    .toString('utf8');

t.test('encoded words split between characters, within 60 columns', async (t) => {
  for (const text of ['𠀀'.repeat(40), 'Zoë Ünal '.repeat(20), '山田 太郎'.repeat(15), '=?utf-8?q?x?=', 'a'.repeat(200)]) {
    const words = encodedWords(text);
    t.ok(
      words.split(' ').every((w) => w.length <= 60),
      `${text.slice(0, 12)}…: every word within 60`,
    );
    t.equal(decode(words), text, `${text.slice(0, 12)}…: decodes back`);
  }
  t.match(encodedWords('Zoë Ünal'), /^=\?UTF-8\?Q\?/, 'mostly Latin: Q');
  t.match(encodedWords('山田 太郎'), /^=\?UTF-8\?B\?/, 'mostly not: base64');
});

t.test('a subject is left as it is only when it reads back the same', async (t) => {
  t.equal(subjectValue('Hello there'), 'Hello there');
  t.equal(subjectValue('Ünïcode'), encodedWords('Ünïcode'), 'non-ASCII');
  t.equal(subjectValue('=?utf-8?q?Fake?='), encodedWords('=?utf-8?q?Fake?='), 'an encoded-word look-alike');
  t.equal(subjectValue('x'.repeat(66)), encodedWords('x'.repeat(66)), 'a word too long to fold');
  t.equal(subjectValue('x'.repeat(65)), 'x'.repeat(65));
  t.equal(subjectValue(' padded '), encodedWords(' padded '), 'blanks at the ends');
  t.equal(subjectValue('say "hi"'), encodedWords('say "hi"'), 'a quote');
});

t.test('a display name is bare, quoted or encoded', async (t) => {
  t.equal(mailbox('', 'a@x.test'), 'a@x.test');
  t.equal(mailbox('Ann Example', 'a@x.test'), 'Ann Example <a@x.test>');
  t.equal(mailbox('Smith, John "Jr"', 'a@x.test'), '"Smith, John \\"Jr\\"" <a@x.test>');
  t.equal(mailbox('=?utf-8?q?Fake?=', 'a@x.test'), `${encodedWords('=?utf-8?q?Fake?=')} <a@x.test>`);
  t.equal(mailbox('Zoë', 'a@x.test'), `${encodedWords('Zoë')} <a@x.test>`);
});

t.test('a parameter is bare, quoted, or RFC 2231', async (t) => {
  t.equal(parameter('filename', 'report.pdf'), 'filename=report.pdf');
  t.equal(parameter('filename', 'a b.txt'), 'filename="a b.txt"');
  t.equal(parameter('filename', 'résumé.pdf'), "filename*=utf-8''r%C3%A9sum%C3%A9.pdf");
  t.equal(parameter('filename', '=?utf-8?B?Zm9v?=.bin'), "filename*=utf-8''%3D%3Futf-8%3FB%3FZm9v%3F%3D.bin");
  t.equal(parameter('name', 'quote"d.txt'), "name*=utf-8''quote%22d.txt");
  const long = parameter('filename', 'é'.repeat(40));
  t.match(long, /^filename\*0\*=utf-8''(%C3%A9)+; filename\*1\*=(%C3%A9)+/, 'continued past 60 characters');
});

t.test('a field folds at spaces, never right after its colon', async (t) => {
  t.equal(foldField('From', '"' + 'x'.repeat(128) + '" <a@x.test>'), `From: "${'x'.repeat(128)}"\r\n <a@x.test>`);
  const folded = foldField('Subject', 'word '.repeat(40).trim());
  t.ok(folded.split('\r\n').every((l) => l.length <= 76));
  t.equal(folded.replace(/\r\n/g, ''), `Subject: ${'word '.repeat(40).trim()}`, 'unfolds to the value');
});
