// Header values that a receiver reads back as exactly what was sent. nodemailer encodes a value
// only when it holds a character outside printable ASCII, and splits base64 words between the
// halves of some characters, so these went out in a form receivers read differently (Python's
// `email` reports them as defects; mail clients decode them):
// - text that looks like an encoded word (`=?utf-8?q?Fake?=`) in a subject, a display name or a
//   file name: receivers decode it, so a sender could show one name and mean another;
// - a subject word too long to fold (a URL, a token): nodemailer folds right after the colon, and
//   one of 998 characters would make a line longer than SMTP allows;
// - a non-ASCII file name in Content-Type's `name=`, which nodemailer writes as encoded words
//   inside a quoted string (a form RFC 2047 §5 forbids), beside the correct RFC 2231 `filename*=`;
// - a character outside the Basic Multilingual Plane that is not an emoji (U+20000), cut in two.
// So the subject, the From display name and attachment names are written here (RFC 2047 encoded
// words, RFC 2231 parameters); nodemailer still writes the structure and every other field.
/** Text a receiver would take for an encoded word. */
const ENCODED_WORD_LIKE = /=\?/;
/** A run of characters without white space longer than fits on a folded line. */
const UNFOLDABLE = /[^\s]{66}/;

// Q's characters that stand for themselves in an encoded word of a phrase (RFC 2047 §5 (3)).
const Q_PLAIN = /^[A-Za-z0-9!*+\-/]$/;

/** One character in Q: itself, `_` for a space, else `=XX` per UTF-8 byte. */
const qOf = (ch: string) =>
  Q_PLAIN.test(ch) ? ch : ch === ' ' ? '_' : [...Buffer.from(ch)].map((b) => `=${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/**
 * Encoded words (RFC 2047) for any text: Q when it is mostly Latin letters (as nodemailer chooses,
 * and as spam filters expect: base64 where Q would do scores as "excess base64"), else base64 of
 * UTF-8; split between characters, never inside one (nodemailer's splitter keeps only emoji
 * surrogate pairs together, so a character such as U+20000 could be cut in two and read back as
 * U+FFFD), each word 60 characters at most: after `Subject: ` the first word still fits the 76
 * columns, so the field is never folded right after its colon (a value that starts with a fold is
 * read with a leading space).
 */
export function encodedWords(text: string): string {
  const latin = (text.match(/[a-z]/gi) ?? []).length;
  const other = (text.match(/[^\x00-\x7f]/g) ?? []).length;
  const q = latin > other;
  const words: string[] = [];
  let chunk = '';
  let size = 0;
  for (const ch of text) {
    // Q: 48 encoded characters; B: 36 bytes of UTF-8, 48 characters of base64.
    const cost = q ? qOf(ch).length : Buffer.byteLength(ch);
    if (chunk && size + cost > (q ? 48 : 36)) {
      words.push(chunk);
      chunk = '';
      size = 0;
    }
    chunk += ch;
    size += cost;
  }
  if (chunk || !words.length) words.push(chunk);
  return words.map((w) => (q ? `=?UTF-8?Q?${[...w].map(qOf).join('')}?=` : `=?UTF-8?B?${Buffer.from(w).toString('base64')}?=`)).join(' ');
}

/** A subject as it is when a receiver reads that back exactly, else as encoded words. */
export function subjectValue(subject: string): string {
  const plain = /^[\x20-\x7e]*$/.test(subject) && !subject.includes('"');
  if (plain && !ENCODED_WORD_LIKE.test(subject) && !UNFOLDABLE.test(subject) && subject === subject.trim()) return subject;
  return encodedWords(subject);
}

/**
 * The From field's value: the address alone, or `name <address>` with the name bare when it is
 * words, quoted when it is other printable ASCII, and encoded words when it is not ASCII or reads
 * as an encoded word.
 */
export function mailbox(name: string, address: string): string {
  if (!name) return address;
  if (/^[\w ]*$/.test(name) && name === name.trim()) return `${name} <${address}>`;
  if (/^[\x20-\x7e]*$/.test(name) && !ENCODED_WORD_LIKE.test(name)) return `"${name.replace(/([\\"])/g, '\\$1')}" <${address}>`;
  return `${encodedWords(name)} <${address}>`;
}

/**
 * A field folded at the spaces of its value, lines within 76 columns where the words allow, and
 * never right after the colon (a value that starts with a fold is read with a leading space, and
 * spam filters flag "no delimiter after the colon").
 */
export function foldField(name: string, value: string): string {
  const words = value.split(' ');
  const lines: string[] = [];
  let line = `${name}: ${words[0]}`;
  for (const word of words.slice(1)) {
    if (line.length + 1 + word.length > 76) {
      lines.push(line);
      line = ` ${word}`;
    } else line += ` ${word}`;
  }
  lines.push(line);
  return lines.join('\r\n');
}

// RFC 2231 attribute characters: what a parameter value may hold unencoded.
const ATTR_CHAR = /^[A-Za-z0-9!#$&+\-.^_`|~]$/;
const PLAIN_PARAM = /^[\x20-\x7e]{1,60}$/;
const TSPECIAL = /[\s'"\\;:/=(),<>@[\]?]|^-/;

/** One parameter, `key=value` quoted as needed, or RFC 2231 `key*=utf-8''…` (continued) when it is not plain ASCII. */
export function parameter(key: string, value: string): string {
  if (PLAIN_PARAM.test(value) && !ENCODED_WORD_LIKE.test(value) && !/["\\]/.test(value))
    return TSPECIAL.test(value) ? `${key}="${value}"` : `${key}=${value}`;
  const pieces: string[] = [];
  let piece = "utf-8''";
  for (const ch of value) {
    const enc = ATTR_CHAR.test(ch) ? ch : [...Buffer.from(ch)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
    if (piece.length + enc.length > 60) {
      pieces.push(piece);
      piece = '';
    }
    piece += enc;
  }
  pieces.push(piece);
  return pieces.length === 1 ? `${key}*=${pieces[0]}` : pieces.map((p, i) => `${key}*${i}*=${p}`).join('; ');
}
