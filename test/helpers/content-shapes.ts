// Generated content for property tests (fast-check): every shape of email content the send API
// accepts — scripts (ASCII, accented UTF-8, emoji, right-to-left), line lengths (short, 77, 998,
// 5,000), line endings (CRLF, LF, a bare CR or LF inside, none at the end), lines SMTP treats
// specially (a leading dot, "From "), display names with quotes and non-ASCII, and attachments with
// hostile names and types. The properties run through test/helpers/property.ts (seeded; FC_SEED
// replays a run).
import fc from 'fast-check';

export const SCRIPTS = {
  ascii: 'abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 .,;:!?=-_"\'<>&()[]{}#%*+/\\|~^`@$\t',
  latin: 'äöüßéèêñçÅØæœ ÿÄÖÜ€£¥ abc .,=',
  emoji: '😀🎉👍🏽❤️‍🔥🇫🇷𠀀 abc =',
  rtl: 'שלום עולם مرحبا بالعالم ‏‎ abc 123',
} as const;
export type Script = keyof typeof SCRIPTS;

const LINE_LENGTHS = [0, 1, 10, 60, 76, 77, 78, 200, 998, 999, 5000] as const;
/** Lines SMTP and MIME treat specially at the start of a line. */
const SPECIAL_STARTS = ['', '', '', '.', '..', 'From ', '--', '=', ' '] as const;
const SEPARATORS = ['\n', '\r\n', '\r', '\n', '\r\n'] as const;

/** Repeats a pattern of code points to a length in code points (emoji are not cut in half). */
function repeatTo(pattern: string, length: number): string {
  const units = [...pattern];
  if (!units.length || length === 0) return '';
  const out: string[] = [];
  for (let i = 0; i < length; i++) out.push(units[i % units.length]);
  return out.join('');
}

const scriptArb = fc.constantFrom(...(Object.keys(SCRIPTS) as Script[]));

/** One line: a special start, then a pattern of one script repeated to a generated length. */
const lineArb = fc
  .record({
    script: scriptArb,
    start: fc.constantFrom(...SPECIAL_STARTS),
    length: fc.constantFrom(...LINE_LENGTHS),
    pattern: fc.integer({ min: 1, max: 12 }),
    seed: fc.integer({ min: 0, max: 1_000_000 }),
  })
  .map(({ script, start, length, pattern, seed }) => {
    const alphabet = [...SCRIPTS[script]];
    let s = seed;
    let p = '';
    for (let i = 0; i < pattern; i++) {
      s = (s * 1103515245 + 12345) % 2 ** 31;
      p += alphabet[s % alphabet.length];
    }
    return start + repeatTo(p, length);
  });

/** A text body: 1–6 lines joined by CRLF, LF or a bare CR, with or without a final line ending. */
export const textArb = fc
  .record({
    lines: fc.array(lineArb, { minLength: 1, maxLength: 6 }),
    seps: fc.array(fc.constantFrom(...SEPARATORS), { minLength: 6, maxLength: 6 }),
    trailing: fc.boolean(),
  })
  .map(({ lines, seps, trailing }) => lines.map((l, i) => l + (i < lines.length - 1 || trailing ? seps[i] : '')).join(''))
  .filter((s) => s.trim() !== '');

/** An html body built from the same lines, as paragraphs (markup and entities included). */
export const htmlArb = fc.record({ text: textArb, link: fc.boolean() }).map(({ text, link }) => {
  const paragraphs = text.split(/\r\n|\r|\n/).map((l) => `<p>${l.replaceAll('&', '&amp;').replaceAll('<', '&lt;')}</p>`);
  if (link) paragraphs.push('<p><a href="https://example.org/path?a=1&amp;b=2">a link</a></p>');
  return `<html><body>${paragraphs.join('\n')}</body></html>`;
});

/** A subject: any script, up to 300 characters, possibly with line endings inside (made one line). */
export const subjectArb = fc
  .record({ line: lineArb, extra: fc.constantFrom('', '\r\nSecond line', '\nBcc: x@example.com', ' =?utf-8?q?not_encoded?=') })
  .map(({ line, extra }) => ([...line].slice(0, 250).join('') + extra).trim() || 'subject');

/** A display name the send API accepts (no control characters, no angle brackets). */
export const fromNameArb = fc.constantFrom(
  '',
  'Ann Example',
  'Ann "The Boss" O\'Brien',
  'Smith, John; Jr.',
  'Zoë Ünal',
  '山田 太郎',
  'שלום',
  '=?utf-8?q?Fake?=',
  '"quoted"',
  'x'.repeat(128),
);

export interface AttachmentShape {
  filename: string;
  contentType: string;
  content: string;
}

const FILENAMES = [
  'report.pdf',
  'a b c.txt',
  'quote"d.txt',
  "it's; here=.csv",
  'résumé – 2026.pdf',
  '日本語のファイル名.txt',
  '..hidden',
  '=?utf-8?B?Zm9v?=.bin',
  'semi;colon,comma.txt',
  'l'.repeat(200) + '.txt',
  'CON',
  '-leading-dash',
] as const;
const TYPES = [
  'application/pdf',
  'text/plain',
  'image/png',
  'application/octet-stream',
  'text/html',
  'application/x-weird+type',
  'message/rfc822',
] as const;

const attachmentArb: fc.Arbitrary<AttachmentShape> = fc
  .record({
    filename: fc.constantFrom(...FILENAMES),
    contentType: fc.constantFrom(...TYPES),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 3000 }),
  })
  .map(({ filename, contentType, bytes }) => ({ filename, contentType, content: Buffer.from(bytes).toString('base64') }));

export const attachmentsArb = fc.array(attachmentArb, { minLength: 0, maxLength: 3 });
