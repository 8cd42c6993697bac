// A corpus of reply shapes real clients produce; each must reduce to what the person typed.
import fc from 'fast-check';
import t from 'tap';
import {
  ATTRIBUTION,
  MAYBE_ATTRIBUTION,
  MAYBE_HEADER,
  MAYBE_SEPARATOR,
  mayHaveMarker,
  OUTLOOK_FROM,
  scanReply,
  SEPARATORS,
  strippedReply,
  unquotedReply,
} from '../../src/inbound/stripped-reply.js';
import { holds } from '../helpers/property.js';

/** The reply as a reader sees it: stripped, or the whole text when nothing was cut (the oracle below). */
const stripReply = (text: string): string => strippedReply(text) ?? unquotedReply(text);

const cases: [string, string, string][] = [
  [
    'gmail attribution',
    'Sounds good, see you then.\n\nOn Mon, Jan 2, 2026 at 10:00 AM Alice <alice@example.com> wrote:\n> Shall we meet at 3?\n> \n> Alice\n',
    'Sounds good, see you then.',
  ],
  [
    'gmail attribution wrapped on two lines',
    'Yes.\n\nOn Mon, Jan 2, 2026 at 10:00 AM Alice Wonderland <alice.wonderland@example.com>\nwrote:\n\n> Question?\n',
    'Yes.',
  ],
  ['apple mail', 'Thanks!\n\nSent from my iPhone\n\n> On 2 Jan 2026, at 10:00, Bob <bob@example.com> wrote:\n> \n> Hi\n', 'Thanks!'],
  [
    'thunderbird',
    'Fixed in the next release.\n\nOn 02/01/2026 10:00, Carol wrote:\n> The build is broken.\n',
    'Fixed in the next release.',
  ],
  [
    'outlook header block',
    'Please find it attached.\n\n________________________________\nFrom: Dave <dave@example.com>\nSent: Monday, January 2, 2026 10:00 AM\nTo: Erin <erin@example.com>\nSubject: Report\n\nCan you send the report?\n',
    'Please find it attached.',
  ],
  [
    'outlook without rule',
    'Approved.\n\nFrom: Dave <dave@example.com>\nSent: Monday, January 2, 2026 10:00 AM\nTo: Erin\nSubject: RE: Budget\n\nPlease approve.\n',
    'Approved.',
  ],
  ['outlook original message', 'OK\n\n-----Original Message-----\nFrom: x@example.com\nSent: today\nSubject: hi\n\nold\n', 'OK'],
  [
    'forwarded block',
    'FYI, see below.\n\n---------- Forwarded message ---------\nFrom: Frank <frank@example.com>\nDate: Mon, Jan 2, 2026\nSubject: Outage\n\nThe server is down.\n',
    'FYI, see below.',
  ],
  ['apple forwarded', 'Look at this\n\nBegin forwarded message:\n\nFrom: Grace <grace@example.com>\nSubject: news\n', 'Look at this'],
  ['signature delimiter', 'Will do.\n\n-- \nHenry Example\nCTO, Example Corp\n+1 555 0100\n', 'Will do.'],
  ['signature then quote', 'Merged.\n-- \nIvan\n\nOn Tue, Jan 3, 2026 at 9:00 Judy <judy@example.com> wrote:\n> Please merge\n', 'Merged.'],
  ['plain quoted tail', 'Agreed\n\n> earlier text\n> more earlier text\n', 'Agreed'],
  ['interleaved inline reply keeps the answers', '> Can you come?\nYes.\n> At 3?\nBetter at 4.\n', 'Yes.\nBetter at 4.'],
  ['french', 'Merci beaucoup.\n\nLe lun. 2 janv. 2026 à 10:00, Karim <karim@example.fr> a écrit :\n> Bonjour\n', 'Merci beaucoup.'],
  ['german', 'Danke.\n\nAm Mo., 2. Jan. 2026 um 10:00 Uhr schrieb Lena <lena@example.de>:\n> Hallo\n', 'Danke.'],
  ['spanish', 'Perfecto.\n\nEl lun, 2 ene 2026 a las 10:00, Marta (<marta@example.es>) escribió:\n> Hola\n', 'Perfecto.'],
  ['outlook mobile', 'On my way\n\nGet Outlook for iOS\n________________________________\nFrom: Nina\n', 'On my way'],
  ['sent from android', 'Call me\n\nSent from my Android device\n', 'Call me'],
  ['crlf line endings', 'Yes\r\n\r\nOn Mon, Jan 2, 2026 at 10:00 AM Olga <olga@example.com> wrote:\r\n> ?\r\n', 'Yes'],
  ['nothing to strip', 'Just a plain message\nwith two lines.', 'Just a plain message\nwith two lines.'],
  ['empty', '', ''],
  ['helpdesk marker', '##- Please type your reply above this line -##\n', ''],
  ['reply above this line', 'New answer here\n\n--- Reply above this line ---\nTicket #123 history\n', 'New answer here'],
  ['date-first attribution', 'Noted.\n\n2026-01-02 10:00 GMT+01:00 Paul Example <paul@example.com>:\n> text\n', 'Noted.'],
];

for (const [name, input, expected] of cases) {
  t.equal(stripReply(input), expected, name);
}

// Null when nothing is cut, so the parsed column stores the body once; the reader's unquotedReply
// gives what stripReply would. Long text with no marker is answered without splitting it into lines.
t.test('the whole text is null', async (t) => {
  const long = 'The quick brown fox jumps over the lazy dog, again and again.\r\n'.repeat(2000);
  for (const text of [
    long,
    'Just a plain message\nwith two lines.\n',
    'Time: 10:00\nSee you',
    '-- not a signature line start\n'.slice(1),
  ]) {
    const reply = strippedReply(text);
    if (reply === null) t.equal(stripReply(text), unquotedReply(text), JSON.stringify(text.slice(0, 30)));
    else t.not(reply, unquotedReply(text), 'a reply given is a cut one');
  }
  t.equal(strippedReply(long), null, 'no marker: null');
  t.equal(strippedReply('Time: 10:00\nSee you'), null, 'a line that looks like a marker but is not cut: null');
  t.equal(strippedReply('Yes\n\nOn Mon, Jan 2, 2026 Olga <o@example.com> wrote:\n> ?\n'), 'Yes');
});

// The quick test in front of the scanner may say yes where nothing is cut, never no where something
// would be: on random text rich in markers' pieces, it says yes wherever the expressions it replaced
// (one search each) found something, and wherever the scanner cuts.
t.test('the quick test misses no marker', async (t) => {
  const replaced = [
    /[:>]/,
    /wrote|écrit|schrieb|escribió|scritto|schreef|escreveu/i,
    /(?:^|\n)\s*[-_#]/,
    /(?:^|\n)\s*(?:begin|sent|get|envoy|von)\b/i,
  ];
  const pieces = [
    '\n',
    '\n',
    ' ',
    '\t',
    '\u00a0',
    '\u3000',
    'a',
    'x',
    '-',
    '_',
    '#',
    'Sent',
    'GET',
    'von',
    'begin',
    'Envoy',
    'e',
    'wrote',
    'On',
    '>',
    ':',
    '\r',
  ];
  let s = 7;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  let misses = 0;
  for (let round = 0; round < 3000; round++) {
    let text = '';
    const length = Math.floor(next() * 12);
    for (let i = 0; i < length; i++) text += pieces[Math.floor(next() * pieces.length)];
    const found = replaced.some((re) => re.test(text)) || strippedReply(text.replace(/\r\n?/g, '\n')) !== null;
    if (found && !mayHaveMarker(text)) {
      misses++;
      t.fail(`missed in ${JSON.stringify(text)}`);
      if (misses > 5) break;
    }
  }
  t.equal(misses, 0);
  t.notOk(mayHaveMarker('The quick brown fox jumps over the lazy dog, again and again.\n'.repeat(100)), 'plain prose: no');
});

// Generated text made of the markers' pieces in any case, white space of every kind (Unicode's
// too), and every line end the scanner knows (LF, CRLF, a lone CR).
const PIECES = [
  ...[
    'On',
    'Le',
    'Am',
    'El',
    'Il',
    'Op',
    'Em',
    'à',
    'wrote',
    'wrote:',
    'a écrit',
    'schrieb',
    'escribió',
    'ha scritto',
    'schreef',
    'escreveu',
  ],
  ...['-----Original Message-----', '---------- Forwarded message ---------', '-----', '-- ', '--', '-', '_'.repeat(20), '_'],
  ...['Begin forwarded message:', 'Sent from my iPhone', 'sent from my galaxy', 'Sent from Outlook for iOS', 'Get Outlook for Android'],
  ...[
    'Envoyé de mon iPhone',
    'Von meinem iPad gesendet',
    '##- Please type your reply above this line -##',
    '--- Reply above this line ---',
  ],
  ...['begin', 'sent', 'get', 'envoy', 'von', 'From:', 'Von:', 'De:', 'Da:', 'Van:', '*From:*', 'Sent:', 'Date:', 'Subject:', 'Betreff:'],
  ...['2024-01-02', '10:00', '<a@b.example>', 'Bob <bob@x.example>', '(<m@x.es>)', 'x', 'hello', ',', '.', ':', '>', '> ', '#', '*'],
  ...[' ', ' ', '\t', '\u00a0', '\u3000', '\u2003', '\ufeff', '\u2028', '\n', '\n', '\n', '\r\n', '\r'],
];
// Half of them without what makes the quick test say yes at once (a colon, a '>', a CR, an
// attribution's verb), so that it has to look at where lines begin.
const QUIET = PIECES.filter((p) => !/[:>\r]|wrote|écrit|schrieb|escribió|scritto|schreef|escreveu/i.test(p));
const replyText = fc
  .oneof(
    fc.array(fc.mixedCase(fc.constantFrom(...PIECES)), { maxLength: 40 }),
    fc.array(fc.mixedCase(fc.constantFrom(...QUIET)), { maxLength: 40 }),
  )
  .map((p) => p.join(''));

t.test('generated text: the quick test never changes the scanner’s answer', async (t) => {
  let cut = 0;
  let no = 0;
  const runs = await holds(
    t,
    'strippedReply equals the scanner alone',
    fc.property(replyText, (text) => {
      const scanned = scanReply(text);
      if (scanned !== null) cut++;
      if (!mayHaveMarker(text)) no++;
      return strippedReply(text) === scanned;
    }),
    1000,
  );
  t.ok(cut >= runs / 20, `the scanner cut ${cut} of ${runs} (a twentieth at least)`);
  t.ok(no >= runs / 20, `the quick test said no to ${no} of ${runs} (a twentieth at least)`);
});

t.test('generated text: each quick test says yes wherever the expressions it guards match', async (t) => {
  await holds(
    t,
    'a superset of the expressions',
    fc.property(replyText, (text) => {
      const lines = text.replace(/\r\n?/g, '\n').split('\n');
      let marker = false;
      for (const [i, line] of lines.entries()) {
        const trimmed = line.trim();
        const separator = SEPARATORS.some((re) => re.test(trimmed));
        const attribution = ATTRIBUTION.some((re) => re.test(trimmed));
        const header = OUTLOOK_FROM.test(trimmed);
        if (separator && !MAYBE_SEPARATOR.test(trimmed)) return false;
        if (attribution && !MAYBE_ATTRIBUTION.test(trimmed)) return false;
        if (header && !MAYBE_HEADER.test(trimmed)) return false;
        const wrapped = /^on\b/i.test(trimmed) && ATTRIBUTION[0].test(`${trimmed} ${lines[i + 1]?.trim() ?? ''}`);
        const signature = line === '-- ' || line === '--' || trimmed === '-- ';
        marker ||= separator || attribution || header || wrapped || signature || /^\s*>/.test(line);
      }
      return !marker || mayHaveMarker(text);
    }),
    1000,
  );
});
