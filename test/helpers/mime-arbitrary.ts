// Generated mail for the inbound fast paths' property tests (fast-check): a message is a tree of
// parts described by what its headers say and what its bodies hold, rendered to bytes. The shapes
// are the ones the fast paths take and the ones next to them: single parts and multiparts (mixed,
// alternative, related) nested up to three levels, every transfer encoding (absent, 7bit, 8bit,
// binary, quoted-printable, base64, unknown), charsets mailparser decodes (Latin-1, windows-1252,
// UTF-16, KOI8-R) and those it passes through (UTF-8, US-ASCII, spelled many ways), format=flowed,
// attachments and dispositions, CRLF and bare LF line ends, header fields in ASCII, raw UTF-8,
// encoded words and Latin-1 bytes, delimiter look-alikes, invalid UTF-8 and bare CR in bodies.
// The description, not the bytes, is what fast-check prints for a counterexample.
import fc from 'fast-check';

/** Text, or bytes as they stand (invalid UTF-8, a bare CR, a NUL). */
export type Piece = string | number[];

export interface Leaf {
  /** The media type as written; null: no Content-Type field. */
  type: string | null;
  /** What follows the media type (`; charset=utf-8`, folded or not). */
  params: string;
  /** Content-Transfer-Encoding as written; null: none. */
  encoding: string | null;
  /** Whether the body is encoded as the field says (else its bytes stand as they are). */
  encoded: boolean;
  disposition: string | null;
  /** Other header lines (a second Content-Type among them). */
  extra: string[];
  /** The line ends of its header block: all CRLF, all bare LF, or the first one a bare LF. */
  headEnds: 'crlf' | 'lf' | 'lf-first';
  /** The order of its fields: Content-Type first, the encoding first, or the other fields first. */
  order: 'type' | 'encoding' | 'extra';
  /**
   * A field written first, after `Content-Description: a part` and a bare LF: mailparser reads
   * it, a reader that splits lines at CRLF alone takes it for the end of the first field's value.
   */
  hidden: string | null;
  body: Piece[];
  /** Characters per line of a base64 body (76 when absent; 0: one line). */
  wrap?: number;
}

export interface Multipart {
  subtype: string;
  boundary: string;
  quoted: boolean;
  /** Parameters after the boundary. */
  params: string;
  extra: string[];
  preamble: Piece[];
  parts: Node[];
  /** Written after each delimiter (transport padding, or a look-alike's tail). */
  padding: string;
  /** How it ends: the close delimiter, none, or the close delimiter twice. */
  close: 'close' | 'none' | 'twice';
  epilogue: Piece[];
}

export type Node = { leaf: Leaf } | { multipart: Multipart };

export interface Message {
  /** The top-level header lines besides the root part's own. */
  top: Piece[][];
  root: Node;
  /** crlf; lf: every line end a bare LF; lf-head: the header block's only. */
  lineEnds: 'crlf' | 'lf' | 'lf-head';
}

const TEXT_PIECES = [
  'Hello',
  'world',
  ' ',
  ' ',
  '\t',
  '\r\n',
  '\r\n',
  '\r\n',
  '\r\n\r\n',
  ' \r\n',
  'Grüße aus Köln',
  '日本語のテキスト',
  '🎉',
  'é',
  '.',
  '..',
  '\r\n.\r\n',
  '=',
  '=3D',
  '=\r\n',
  '=E2=82=AC',
  '--',
  '-- \r\n',
  '--b1',
  '\r\n--b1\r\n',
  '\r\n--b1--\r\n',
  '--b2',
  '--b',
  'On Mon, 2 Jan 2026 Bob <bob@x.example> wrote:',
  '\r\n> quoted line',
  'From: Dave\r\nSent: today\r\nSubject: re',
  'Sent from my iPhone',
  '-----Original Message-----',
  '<p>',
  '</p>',
  '<br>',
  '&amp;',
  'Content-Type: text/html',
  '\u00a0',
  'The quick brown fox jumps over the lazy dog, again and again, until the line is long enough. ',
  'Zeile: grüße, ünïcödé, 日本語 and a 😀, again and again, long enough to make a body worth keeping once. ',
];
const BYTE_PIECES: number[][] = [[0xff], [0xc3], [0xc3, 0x28], [0xe9], [0x00], [0x0d], [0x0a], [0x80], [0xe2, 0x82]];

/** Paragraphs of a long body: a body kept as a span is 1,024 characters at least. */
const PARAGRAPHS = [
  'A paragraph of plain words, line after line, long enough that a few of them make a long body.\r\n'.repeat(12),
  'Zeile: grüße, ünïcödé, 日本語 und ein 😀, Zeile um Zeile, bis der Text lang genug ist.\r\n'.repeat(12),
];

/** A body: mostly text, sometimes long (spans start at 1,024 characters), now and then raw bytes. */
const bodyArb: fc.Arbitrary<Piece[]> = fc.oneof(
  { weight: 3, arbitrary: fc.array(fc.constantFrom(...TEXT_PIECES), { maxLength: 20 }) },
  { weight: 2, arbitrary: fc.array(fc.constantFrom(...TEXT_PIECES), { minLength: 20, maxLength: 60 }) },
  {
    weight: 3,
    arbitrary: fc.array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...TEXT_PIECES) }, fc.constantFrom(...PARAGRAPHS)), {
      minLength: 4,
      maxLength: 12,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.array(
      fc.oneof({ weight: 5, arbitrary: fc.constantFrom<Piece>(...TEXT_PIECES) }, fc.constantFrom<Piece>(...BYTE_PIECES)),
      {
        maxLength: 40,
      },
    ),
  },
);

const TEXT_TYPES = ['text/plain', 'text/html', 'TEXT/PLAIN', 'Text/HTML'];
const OTHER_TYPES = [
  'application/octet-stream',
  'image/png',
  'text/calendar',
  'text/enriched',
  'message/delivery-status',
  'message/rfc822',
];
const CHARSETS = [
  'utf-8',
  'UTF-8',
  '"utf-8"',
  'utf8',
  'us-ascii',
  '"US-ASCII"',
  'ascii',
  'utf_8',
  'iso-8859-1',
  'ISO-8859-1',
  'windows-1252',
  'utf-16',
  'koi8-r',
  'x-unknown',
  'unicode-1-1-utf-8',
];
const OTHER_PARAMS = [
  'format=flowed',
  'format=flowed; delsp=yes',
  'name="notes.txt"',
  'x-mac-type=54455854',
  'charset*=utf-8',
  'format=fixed',
];
const SEPARATORS = ['; ', ';', ';\r\n ', ';\r\n\t', ' ; '];

const paramsArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.option(fc.constantFrom(...CHARSETS), { nil: null, freq: 2 }),
    fc.array(fc.constantFrom(...OTHER_PARAMS), { maxLength: 2 }),
    fc.constantFrom(...SEPARATORS),
    fc.boolean(),
  )
  .map(([charset, others, sep, charsetFirst]) => {
    const list = charset === null ? others : charsetFirst ? [`charset=${charset}`, ...others] : [...others, `charset=${charset}`];
    return list.map((p) => sep + p).join('');
  });

const ENCODINGS = [
  null,
  '7bit',
  '8bit',
  'binary',
  '7BIT',
  ' 8bit ',
  '8bit (comment)',
  'quoted-printable',
  'Quoted-Printable',
  'base64',
  'BASE64',
  'x-uuencode',
];
const DISPOSITIONS = [
  null,
  'inline',
  'INLINE',
  'attachment',
  'attachment; filename="a.txt"',
  'attachment; filename="résumé.pdf"',
  'inline; filename=b.txt',
];
const PART_EXTRAS = [
  'Content-ID: <c1@sender.example>',
  'Content-Description: a part',
  'Content-Type: text/html',
  'Content-Transfer-Encoding: base64',
  'X-Ünï: ü',
];

const HIDDEN = [
  'Content-Transfer-Encoding: quoted-printable',
  'Content-Type: text/plain; charset=iso-8859-1',
  'Content-Transfer-Encoding: base64',
  'Content-Disposition: attachment',
];

/** A part that is not multipart, of any kind. */
const leafArb: fc.Arbitrary<Leaf> = fc.record({
  type: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...TEXT_TYPES) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom(...OTHER_TYPES) },
  ),
  params: paramsArb,
  encoding: fc.constantFrom(...ENCODINGS),
  encoded: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  disposition: fc.oneof({ weight: 2, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...DISPOSITIONS) }),
  extra: fc.oneof(
    { weight: 3, arbitrary: fc.constant<string[]>([]) },
    { weight: 1, arbitrary: fc.array(fc.constantFrom(...PART_EXTRAS), { maxLength: 2 }) },
  ),
  headEnds: fc.oneof(
    { weight: 14, arbitrary: fc.constant('crlf' as const) },
    { weight: 1, arbitrary: fc.constantFrom('lf' as const, 'lf-first' as const) },
  ),
  order: fc.constantFrom('type' as const, 'encoding' as const, 'extra' as const),
  hidden: fc.oneof({ weight: 15, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...HIDDEN) }),
  body: bodyArb,
});

/**
 * A text part of the kind the fast paths take (text/plain or text/html in UTF-8 or ASCII, passed
 * through as it is, nothing else said about it), with a field now and then that turns it away.
 */
function textCandidate(types: string[], body = bodyArb): fc.Arbitrary<Leaf> {
  return fc.record({
    type: fc.constantFrom(...types),
    params: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('', ...CHARSETS.slice(0, 8).flatMap((c) => [`; charset=${c}`, `;\r\n charset=${c}`])) },
      { weight: 1, arbitrary: paramsArb },
    ),
    encoding: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(null, '7bit', '8bit', 'binary', '8BIT') },
      { weight: 1, arbitrary: fc.constantFrom(...ENCODINGS) },
    ),
    encoded: fc.constant(true),
    disposition: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...DISPOSITIONS) }),
    extra: fc.oneof(
      { weight: 4, arbitrary: fc.constant<string[]>([]) },
      { weight: 1, arbitrary: fc.array(fc.constantFrom(...PART_EXTRAS), { minLength: 1, maxLength: 1 }) },
    ),
    headEnds: fc.oneof(
      { weight: 5, arbitrary: fc.constant('crlf' as const) },
      { weight: 1, arbitrary: fc.constantFrom('lf' as const, 'lf-first' as const) },
    ),
    order: fc.oneof(
      { weight: 3, arbitrary: fc.constant('type' as const) },
      { weight: 1, arbitrary: fc.constantFrom('encoding' as const, 'extra' as const) },
    ),
    hidden: fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...HIDDEN) }),
    body,
  });
}

const BOUNDARIES = ['b1', 'b2', 'b', 'Apple-Mail=_1A2B', "'()+_,-./:=?", 'boundary with spaces', 'x'.repeat(70), '----=_NextPart_000_0001'];
const SUBTYPES = ['alternative', 'mixed', 'related', 'ALTERNATIVE', 'Alternative'];

function multipartArb(subtype: fc.Arbitrary<string>, parts: fc.Arbitrary<Node[]>, tidy: boolean): fc.Arbitrary<Multipart> {
  const w = tidy ? 8 : 2;
  return fc.record({
    subtype,
    boundary: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...BOUNDARIES) },
      { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/) },
    ),
    quoted: fc.boolean(),
    params: fc.oneof(
      { weight: w, arbitrary: fc.constant('') },
      { weight: 1, arbitrary: fc.constantFrom('; charset=utf-8', ';\r\n\ttype="text/html"', '; x=1') },
    ),
    extra: fc.oneof(
      { weight: w, arbitrary: fc.constant<string[]>([]) },
      { weight: 1, arbitrary: fc.array(fc.constantFrom(...PART_EXTRAS), { maxLength: 1 }) },
    ),
    preamble: fc.oneof(
      { weight: 3, arbitrary: fc.constant<Piece[]>([]) },
      { weight: 1, arbitrary: fc.array(fc.constantFrom<Piece>(...TEXT_PIECES), { maxLength: 4 }) },
    ),
    parts,
    padding: fc.oneof({ weight: 4 * w, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(' ', '\t', '  ', 'x') }),
    close: fc.oneof(
      { weight: 4 * w, arbitrary: fc.constant('close' as const) },
      { weight: 1, arbitrary: fc.constantFrom('none' as const, 'twice' as const) },
    ),
    epilogue: fc.oneof(
      { weight: 3, arbitrary: fc.constant<Piece[]>([]) },
      { weight: 1, arbitrary: fc.array(fc.constantFrom<Piece>(...TEXT_PIECES), { maxLength: 4 }) },
    ),
  });
}

/** A part: a leaf, or (while `depth` allows) a multipart (mixed, alternative, related) of one to three parts. */
function nodeArb(depth: number): fc.Arbitrary<Node> {
  const leaf = leafArb.map((l) => ({ leaf: l }));
  if (depth <= 0) return leaf;
  const parts = fc.array(nodeArb(depth - 1), { minLength: 1, maxLength: 3 });
  return fc.oneof(
    { weight: 2, arbitrary: leaf },
    { weight: 1, arbitrary: multipartArb(fc.constantFrom(...SUBTYPES), parts, false).map((m) => ({ multipart: m })) },
  );
}

const FROM: Piece[][] = [
  ['From: Alice <alice@sender.example>'],
  ['From: "Ülrich Müller" <ülrich@bücher.example>'],
  ['From: =?utf-8?q?Bob_M=C3=BCller?= <bob@sender.example>'],
  ['From: Ren', [0xe9], ' <rene@sender.example>'],
];
const SUBJECT: Piece[][] = [
  ['Subject: Hello'],
  ['Subject: Grüße aus Köln — 日本語 🎉'],
  ['Subject: =?utf-8?b?w5xiZXIgZGVuIEJlcmljaHQ=?='],
  ['Subject: caf', [0xe9], ' cr', [0xe8], 'me'],
  ['Subject: a long subject\r\n folded onto a second line'],
];
const TOP_EXTRAS: Piece[][] = [
  ['MIME-Version: 1.0'],
  ['Message-ID: <m1@sender.example>'],
  ['Date: Mon, 02 Jan 2026 10:00:00 +0000'],
  ['X-Ünï: ünï'],
  ['In-Reply-To: <m0@sender.example>'],
  ['X-Folded: one\r\n\ttwo'],
  // Fields that mean nothing to mailparser but that a glance at the header block may misread.
  ['X-Note: format=flowed is not a parameter here'],
  ['X-Charset: charset=iso-8859-1'],
  ['Content-Disposition: inline'],
  ['Content-Type: text/html'],
];

function messageArb(root: fc.Arbitrary<Node>): fc.Arbitrary<Message> {
  return fc.record({
    top: fc
      .tuple(
        fc.constantFrom(...FROM),
        fc.constantFrom(...SUBJECT),
        fc.oneof(
          { weight: 3, arbitrary: fc.array(fc.constantFrom(...TOP_EXTRAS.slice(0, 6)), { maxLength: 3 }) },
          { weight: 1, arbitrary: fc.array(fc.constantFrom(...TOP_EXTRAS), { maxLength: 2 }) },
        ),
      )
      .map(([from, subject, extras]) => [from, ['To: inbox@acme.in.postern.test'], subject, ...extras]),
    root,
    lineEnds: fc.oneof(
      { weight: 10, arbitrary: fc.constant('crlf' as const) },
      { weight: 1, arbitrary: fc.constantFrom('lf' as const, 'lf-head' as const) },
    ),
  });
}

/**
 * A file as mail clients attach one (base64, a name, a disposition), with now and then what turns
 * the attachment shortcut away: another encoding, bytes not encoded as the field says, a text or
 * message type, no disposition, odd line lengths.
 */
const fileCandidate: fc.Arbitrary<Leaf> = fc.record({
  type: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('application/pdf', 'image/png', 'application/octet-stream', 'APPLICATION/PDF') },
    { weight: 1, arbitrary: fc.constantFrom(null, 'text/plain', 'text/csv', 'message/rfc822', 'multipart/mixed') },
  ),
  params: fc.constantFrom('', '; name="report.pdf"', ';\r\n name="r\u00e9sum\u00e9.pdf"', '; name=a.png'),
  encoding: fc.oneof(
    { weight: 6, arbitrary: fc.constant('base64') },
    { weight: 1, arbitrary: fc.constantFrom('BASE64', ' base64 ', 'base64 (comment)', 'quoted-printable', null) },
  ),
  encoded: fc.oneof({ weight: 12, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  disposition: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('attachment; filename="report.pdf"', 'attachment', 'ATTACHMENT;\r\n filename=a.bin') },
    { weight: 1, arbitrary: fc.constantFrom(null, 'inline', 'inline; filename="a.png"', 'attachmentx') },
  ),
  extra: fc.oneof(
    { weight: 4, arbitrary: fc.constant<string[]>([]) },
    { weight: 1, arbitrary: fc.array(fc.constantFrom(...PART_EXTRAS), { minLength: 1, maxLength: 1 }) },
  ),
  headEnds: fc.oneof(
    { weight: 12, arbitrary: fc.constant('crlf' as const) },
    { weight: 1, arbitrary: fc.constantFrom('lf' as const, 'lf-first' as const) },
  ),
  order: fc.constantFrom('type' as const, 'encoding' as const, 'extra' as const),
  hidden: fc.oneof({ weight: 12, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...HIDDEN) }),
  body: fc.oneof(
    { weight: 4, arbitrary: fc.uint8Array({ maxLength: 3000 }).map((b) => [Array.from(b)] as Piece[]) },
    { weight: 1, arbitrary: bodyArb },
  ),
  wrap: fc.oneof({ weight: 4, arbitrary: fc.constant(76) }, { weight: 1, arbitrary: fc.constantFrom(0, 64, 72, 4, 3) }),
});

/**
 * Mail with files: mostly multipart/mixed of a text or an alternative and one to three files of
 * the kind the attachment shortcut takes, the rest of every shape around them.
 */
export const attachmentMessage = messageArb(
  fc
    .oneof(
      {
        weight: 4,
        arbitrary: multipartArb(
          fc.oneof({ weight: 6, arbitrary: fc.constant('mixed') }, { weight: 1, arbitrary: fc.constantFrom(...SUBTYPES) }),
          fc
            .tuple(
              fc.oneof(
                { weight: 3, arbitrary: textCandidate(['text/plain', 'text/html']).map((l): Node => ({ leaf: l })) },
                { weight: 2, arbitrary: nodeArb(1) },
              ),
              fc.array(
                fc.oneof({ weight: 5, arbitrary: fileCandidate.map((l): Node => ({ leaf: l })) }, { weight: 1, arbitrary: nodeArb(1) }),
                { minLength: 1, maxLength: 3 },
              ),
            )
            .map(([body, files]) => [body, ...files]),
          true,
        ),
      },
      { weight: 1, arbitrary: multipartArb(fc.constantFrom(...SUBTYPES), fc.array(nodeArb(2), { minLength: 1, maxLength: 3 }), false) },
    )
    .map((m) => ({ multipart: m })),
);

/** Messages of every shape: a leaf, or multiparts nested up to three levels. */
export const anyMessage = messageArb(nodeArb(3));

/** Single parts, most of them of the kind the plain text glance takes. */
export const singlePartMessage = messageArb(
  fc
    .oneof({ weight: 3, arbitrary: textCandidate(['text/plain', 'TEXT/PLAIN', 'text/plain ']) }, { weight: 1, arbitrary: leafArb })
    .map((l) => ({ leaf: l })),
);

/** Single parts as above whose text is long: over 1,024 characters, what is kept as a span. */
export const longSinglePartMessage = messageArb(
  fc
    .oneof(
      {
        weight: 3,
        arbitrary: textCandidate(
          ['text/plain'],
          fc.tuple(fc.constantFrom(...PARAGRAPHS), bodyArb).map(([paragraph, rest]) => [paragraph, ...rest]),
        ),
      },
      { weight: 1, arbitrary: leafArb },
    )
    .map((l) => ({ leaf: l })),
);

/**
 * Multiparts, most of them one level of text and HTML parts of the kind the skeleton takes (with
 * an attachment or a nested multipart now and then), the rest of every shape.
 */
export const multipartMessage = messageArb(
  fc
    .oneof(
      {
        weight: 3,
        arbitrary: multipartArb(
          fc.oneof({ weight: 6, arbitrary: fc.constant('alternative') }, { weight: 1, arbitrary: fc.constantFrom(...SUBTYPES) }),
          fc.array(
            fc.oneof(
              { weight: 6, arbitrary: textCandidate(['text/plain', 'text/html', 'TEXT/HTML']).map((l) => ({ leaf: l })) },
              { weight: 1, arbitrary: nodeArb(1) },
            ),
            { minLength: 1, maxLength: 3 },
          ),
          true,
        ),
      },
      { weight: 1, arbitrary: multipartArb(fc.constantFrom(...SUBTYPES), fc.array(nodeArb(2), { minLength: 1, maxLength: 3 }), false) },
    )
    .map((m) => ({ multipart: m })),
);

// Rendering.

const charsetOf = (params: string): string => /charset\s*=\s*"?([^";\s]+)/i.exec(params)?.[1]?.toLowerCase() ?? 'utf-8';

function encodeText(s: string, charset: string): Buffer {
  if (/^(?:iso-8859-1|windows-1252|latin1)$/.test(charset)) return Buffer.from(s, 'latin1');
  if (/^utf-16/.test(charset)) return Buffer.from(s, 'utf16le');
  return Buffer.from(s, 'utf8');
}

const bytesOf = (pieces: Piece[], charset = 'utf-8'): Buffer =>
  Buffer.concat(pieces.map((p) => (typeof p === 'string' ? encodeText(p, charset) : Buffer.from(p))));

/** Quoted-printable as a sender writes it: CRLF kept as line breaks, soft breaks before 76. */
function quotedPrintable(bytes: Buffer): Buffer {
  let out = '';
  let line = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 0x0d && bytes[i + 1] === 0x0a) {
      out += '\r\n';
      line = 0;
      i++;
      continue;
    }
    const next = bytes[i + 1];
    const atLineEnd = next === undefined || (next === 0x0d && bytes[i + 2] === 0x0a);
    const plain = (b >= 33 && b <= 126 && b !== 61) || ((b === 32 || b === 9) && !atLineEnd);
    const enc = plain ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
    if (line + enc.length > 75) {
      out += '=\r\n';
      line = 0;
    }
    out += enc;
    line += enc.length;
  }
  return Buffer.from(out, 'latin1');
}

const base64 = (bytes: Buffer, wrap = 76): Buffer =>
  Buffer.from(
    wrap === 0 ? bytes.toString('base64') : (bytes.toString('base64').match(new RegExp(`.{1,${wrap}}`, 'g')) ?? []).join('\r\n'),
    'latin1',
  );

function leafBytes(l: Leaf): { headers: Buffer[]; body: Buffer; headEnds: Leaf['headEnds'] } {
  const type = l.type === null ? [] : [`Content-Type: ${l.type}${l.params}`];
  const encoding = l.encoding === null ? [] : [`Content-Transfer-Encoding: ${l.encoding}`];
  const disposition = l.disposition === null ? [] : [`Content-Disposition: ${l.disposition}`];
  const ordered =
    l.order === 'type'
      ? [...type, ...encoding, ...disposition, ...l.extra]
      : l.order === 'encoding'
        ? [...encoding, ...type, ...disposition, ...l.extra]
        : [...l.extra, ...encoding, ...disposition, ...type];
  const hidden = l.hidden === null ? [] : [`Content-Description: a part\n${l.hidden}`];
  const headers = [...hidden, ...ordered].map((h) => Buffer.from(h, 'utf8'));
  const raw = bytesOf(l.body, charsetOf(l.params));
  const enc = (l.encoding ?? '').trim().toLowerCase();
  const body = !l.encoded ? raw : enc === 'quoted-printable' ? quotedPrintable(raw) : enc === 'base64' ? base64(raw, l.wrap) : raw;
  return { headers, body, headEnds: l.headEnds };
}

function multipartBytes(m: Multipart): { headers: Buffer[]; body: Buffer; headEnds?: Leaf['headEnds'] } {
  const b = m.quoted || /[ ]/.test(m.boundary) ? `"${m.boundary}"` : m.boundary;
  const headers = [`Content-Type: multipart/${m.subtype}; boundary=${b}${m.params}`, ...m.extra].map((h) => Buffer.from(h, 'utf8'));
  const crlf = Buffer.from('\r\n');
  const delimiter = Buffer.from(`--${m.boundary}`, 'latin1');
  const chunks: Buffer[] = [];
  if (m.preamble.length) chunks.push(bytesOf(m.preamble), crlf);
  for (const part of m.parts) chunks.push(delimiter, Buffer.from(m.padding), crlf, nodeBytes(part), crlf);
  const close = Buffer.concat([delimiter, Buffer.from('--'), Buffer.from(m.padding), crlf]);
  if (m.close !== 'none') chunks.push(close);
  if (m.close === 'twice') chunks.push(close);
  chunks.push(bytesOf(m.epilogue));
  return { headers, body: Buffer.concat(chunks) };
}

function nodeBytes(n: Node, top: Buffer[] = []): Buffer {
  const { headers, body, headEnds = 'crlf' } = 'leaf' in n ? leafBytes(n.leaf) : multipartBytes(n.multipart);
  const crlf = Buffer.from('\r\n');
  const head = Buffer.concat([...[...top, ...headers].flatMap((h) => [h, crlf]), crlf]).toString('latin1');
  const ended = headEnds === 'lf' ? head.replaceAll('\r\n', '\n') : headEnds === 'lf-first' ? head.replace('\r\n', '\n') : head;
  return Buffer.concat([Buffer.from(ended, 'latin1'), body]);
}

/** The message as bytes. */
export function render(m: Message): Buffer {
  const crlf = nodeBytes(
    m.root,
    m.top.map((line) => bytesOf(line)),
  );
  if (m.lineEnds === 'crlf') return crlf;
  if (m.lineEnds === 'lf') return Buffer.from(crlf.toString('latin1').replaceAll('\r\n', '\n'), 'latin1');
  const end = crlf.indexOf('\r\n\r\n');
  return Buffer.concat([
    Buffer.from(crlf.toString('latin1', 0, end).replaceAll('\r\n', '\n'), 'latin1'),
    Buffer.from('\n\n'),
    crlf.subarray(end + 4),
  ]);
}
