// Quoted-printable (RFC 2045 §6.7) exactly as nodemailer writes it, for ASCII text. nodemailer's
// encoder builds its output one byte at a time through a range table and then wraps it with
// regular expressions over every 76-character window: about 100 µs for a 5 KiB html part, the
// largest single cost of composing one. This is the same two steps (its `encode`, then its `wrap`
// at 76) written as string scans. The output must be byte for byte nodemailer's, so that a
// message composed with it is the message nodemailer would compose:
// test/channels/email/quoted-printable.test.ts holds both functions to nodemailer's own over
// generated inputs, and test/channels/email/compose-oracle.test.ts holds whole messages.

/** Text the fast encoder takes: printable ASCII, tab, CR and LF (nothing nodemailer would escape but `=` and trailing blanks). */
export const QP_ASCII = /^[\x09\x0a\x0d\x20-\x7e]*$/;

const ESCAPED = /=|[ \t](?=[\r\n]|$)/g;
const escape = (c: string) => (c === '=' ? '=3D' : c === ' ' ? '=20' : '=09');

const isBlank = (c: number) => c === 0x20 || c === 0x09;

/**
 * Whether text holds an `=` or a blank before a line end or the end: most text has neither, and
 * native searches for `=`, CR and LF find that faster than a regular expression over every character.
 */
function needsEscape(text: string): boolean {
  if (text.includes('=') || isBlank(text.charCodeAt(text.length - 1))) return true;
  for (const end of ['\r', '\n']) {
    for (let i = text.indexOf(end); i !== -1; i = text.indexOf(end, i + 1)) if (i > 0 && isBlank(text.charCodeAt(i - 1))) return true;
  }
  return false;
}

/** nodemailer's `qp.encode` of text matching QP_ASCII: `=` escaped, and a blank before CR, LF or the end. */
export function encodeAscii(text: string): string {
  return needsEscape(text) ? text.replace(ESCAPED, escape) : text;
}

const LINE_LENGTH = 76;
const MARGIN = Math.floor(LINE_LENGTH / 3);
const isBreak = (c: number) => c === 0x20 || c === 0x09 || c === 0x2e || c === 0x2c || c === 0x21 || c === 0x3f; // space, tab . , ! ?
const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** Where an `=` followed by at most `max` hex digits ends str[from, to), or -1 (the regex /=[\da-f]{0,max}$/i). */
function trailingEscape(str: string, from: number, to: number, max: 1 | 2): number {
  for (let k = 0; k <= max && to - 1 - k >= from; k++) {
    const at = to - 1 - k;
    if (str.charCodeAt(at) === 0x3d) return at;
    if (!isHex(str.charCodeAt(at))) return -1;
  }
  return -1;
}

/** Whether str[from, to) is one to four escapes and nothing else (/^(?:=[\da-f]{2}){1,4}$/i). */
function onlyEscapes(str: string, from: number, to: number): boolean {
  const n = to - from;
  if (n === 0 || n > 12 || n % 3 !== 0) return false;
  for (let i = from; i < to; i += 3) {
    if (str.charCodeAt(i) !== 0x3d || !isHex(str.charCodeAt(i + 1)) || !isHex(str.charCodeAt(i + 2))) return false;
  }
  return true;
}

/** Whether str[from, to) ends in a whole escape (/=[\da-f]{2}$/i). */
const endsInEscape = (str: string, from: number, to: number) =>
  to - from >= 3 && str.charCodeAt(to - 3) === 0x3d && isHex(str.charCodeAt(to - 2)) && isHex(str.charCodeAt(to - 1));

/** Whether str[from, to) holds a character JavaScript's `.` does not match (CR, U+2028, U+2029; LF is searched apart). */
function hasTerminator(str: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = str.charCodeAt(i);
    if (c === 0x0d || c === 0x2028 || c === 0x2029) return true;
  }
  return false;
}

/** The last LF in str[from, to), or -1. */
function lastLf(str: string, from: number, to: number): number {
  for (let i = to - 1; i >= from; i--) if (str.charCodeAt(i) === 0x0a) return i;
  return -1;
}

/**
 * nodemailer's `qp.wrap(str, 76)`: soft line breaks (`=` CRLF) so no line passes 76 characters,
 * breaking after a CRLF, a bare LF, a blank or punctuation near the end of the window, and never
 * inside an escape or a UTF-8 sequence. Its steps, on positions in the string instead of a
 * substring and regular expressions per window.
 */
export function wrapEncoded(str: string): string {
  const len = str.length;
  if (len <= LINE_LENGTH) return str;
  const parts: string[] = [];
  let pos = 0;
  let crlf = str.indexOf('\r\n');
  let nextLf = str.indexOf('\n');
  while (pos < len) {
    const windowEnd = Math.min(pos + LINE_LENGTH, len);
    // A CRLF inside the window: the line ends after it. (The next CRLF is searched for once per
    // CRLF, not once per window: a long line has none for thousands of characters.)
    if (crlf !== -1 && crlf < pos) crlf = str.indexOf('\r\n', pos);
    if (crlf !== -1 && crlf + 2 <= windowEnd) {
      parts.push(str.slice(pos, crlf + 2));
      pos = crlf + 2;
      continue;
    }
    if (str.charCodeAt(windowEnd - 1) === 0x0a) {
      parts.push(str.slice(pos, windowEnd));
      pos = windowEnd;
      continue;
    }
    // An LF among the last MARGIN characters with no line terminator after it: the line ends after it.
    if (nextLf !== -1 && nextLf < pos) nextLf = str.indexOf('\n', pos);
    const lf = nextLf !== -1 && nextLf < windowEnd ? lastLf(str, Math.max(pos, windowEnd - MARGIN), windowEnd) : -1;
    if (lf !== -1 && !hasTerminator(str, lf + 1, windowEnd)) {
      parts.push(str.slice(pos, lf + 1));
      pos = lf + 1;
      continue;
    }
    let end = windowEnd;
    let broke = false;
    if (windowEnd - pos > LINE_LENGTH - MARGIN) {
      // The last blank or punctuation among the last MARGIN characters ends the line.
      for (let k = windowEnd - 1; k >= windowEnd - MARGIN; k--) {
        if (isBreak(str.charCodeAt(k))) {
          end = k + 1;
          broke = true;
          break;
        }
      }
    }
    if (!broke && trailingEscape(str, pos, end, 2) !== -1) {
      // An escape cut by the window goes whole to the next line.
      const cut = trailingEscape(str, pos, end, 1);
      if (cut !== -1) end = cut;
      // So does a UTF-8 sequence: whole escapes of continuation bytes, back to their lead byte.
      while (end - pos > 3 && end - pos < len - pos && !onlyEscapes(str, pos, end) && endsInEscape(str, pos, end)) {
        const code = parseInt(str.slice(end - 2, end), 16);
        if (code < 128) break;
        end -= 3;
        if (code >= 0xc0) break;
      }
    }
    if (end < len && str.charCodeAt(end - 1) !== 0x0a) {
      if (end - pos === LINE_LENGTH && endsInEscape(str, pos, end)) end -= 3;
      else if (end - pos === LINE_LENGTH) end -= 1;
      parts.push(str.slice(pos, end), '=\r\n');
    } else {
      parts.push(str.slice(pos, end));
    }
    pos = end;
  }
  return parts.join('');
}

/** The quoted-printable body nodemailer would write for ASCII text (QP_ASCII). */
export function quotedPrintableAscii(text: string): string {
  return wrapEncoded(encodeAscii(text));
}
