// A corpus of reply shapes real clients produce; each must reduce to what the person typed.
import t from 'tap';
import { mayHaveMarker, strippedReply, stripReply, unquotedReply } from '../../src/inbound/stripped-reply.js';

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
