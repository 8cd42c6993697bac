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

/** nodemailer's `qp.encode` of text matching QP_ASCII: `=` escaped, and a blank before CR, LF or the end. */
export function encodeAscii(text: string): string {
  return text.replace(ESCAPED, escape);
}

const LINE_LENGTH = 76;
const MARGIN = Math.floor(LINE_LENGTH / 3);
const isBreak = (c: number) => c === 0x20 || c === 0x09 || c === 0x2e || c === 0x2c || c === 0x21 || c === 0x3f; // space, tab . , ! ?
const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** Where an `=` followed by at most `max` hex digits ends `s`, or -1 (the regex /=[\da-f]{0,max}$/i). */
function trailingEscape(s: string, max: 1 | 2): number {
  for (let k = 0; k <= max && k < s.length; k++) {
    const at = s.length - 1 - k;
    if (s.charCodeAt(at) === 0x3d) return at;
    if (!isHex(s.charCodeAt(at))) return -1;
  }
  return -1;
}

/** Whether `s` is one to four escapes and nothing else (/^(?:=[\da-f]{2}){1,4}$/i). */
function onlyEscapes(s: string): boolean {
  if (s.length === 0 || s.length > 12 || s.length % 3 !== 0) return false;
  for (let i = 0; i < s.length; i += 3) {
    if (s.charCodeAt(i) !== 0x3d || !isHex(s.charCodeAt(i + 1)) || !isHex(s.charCodeAt(i + 2))) return false;
  }
  return true;
}

/** Whether `s` ends in a whole escape (/=[\da-f]{2}$/i). */
const endsInEscape = (s: string) =>
  s.length >= 3 && s.charCodeAt(s.length - 3) === 0x3d && isHex(s.charCodeAt(s.length - 2)) && isHex(s.charCodeAt(s.length - 1));

/**
 * nodemailer's `qp.wrap(str, 76)`: soft line breaks (`=` CRLF) so no line passes 76 characters,
 * breaking after a CRLF, a bare LF, a blank or punctuation near the end of the window, and never
 * inside an escape or a UTF-8 sequence.
 */
export function wrapEncoded(str: string): string {
  const len = str.length;
  if (len <= LINE_LENGTH) return str;
  let pos = 0;
  let result = '';
  while (pos < len) {
    let line = str.substr(pos, LINE_LENGTH);
    const crlf = line.indexOf('\r\n');
    if (crlf !== -1) {
      line = line.slice(0, crlf + 2);
      result += line;
      pos += line.length;
      continue;
    }
    if (line.charCodeAt(line.length - 1) === 0x0a) {
      result += line;
      pos += line.length;
      continue;
    }
    // An LF among the last MARGIN characters with no line terminator after it: the line ends after it.
    const lf = line.lastIndexOf('\n');
    if (lf !== -1 && lf >= line.length - MARGIN && !/[\r\u2028\u2029]/.test(line.slice(lf + 1))) {
      line = line.slice(0, lf + 1);
      result += line;
      pos += line.length;
      continue;
    }
    let broke = false;
    if (line.length > LINE_LENGTH - MARGIN) {
      // The last blank or punctuation among the last MARGIN characters ends the line.
      for (let k = line.length - 1; k >= line.length - MARGIN; k--) {
        if (isBreak(line.charCodeAt(k))) {
          line = line.slice(0, k + 1);
          broke = true;
          break;
        }
      }
    }
    if (!broke && trailingEscape(line, 2) !== -1) {
      // An escape cut by the window goes whole to the next line.
      const cut = trailingEscape(line, 1);
      if (cut !== -1) line = line.slice(0, cut);
      // So does a UTF-8 sequence: whole escapes of continuation bytes, back to their lead byte.
      while (line.length > 3 && line.length < len - pos && !onlyEscapes(line) && endsInEscape(line)) {
        const code = parseInt(line.slice(-2), 16);
        if (code < 128) break;
        line = line.slice(0, -3);
        if (code >= 0xc0) break;
      }
    }
    if (pos + line.length < len && line.charCodeAt(line.length - 1) !== 0x0a) {
      if (line.length === LINE_LENGTH && endsInEscape(line)) line = line.slice(0, -3);
      else if (line.length === LINE_LENGTH) line = line.slice(0, -1);
      pos += line.length;
      line += '=\r\n';
    } else {
      pos += line.length;
    }
    result += line;
  }
  return result;
}

/** The quoted-printable body nodemailer would write for ASCII text (QP_ASCII). */
export function quotedPrintableAscii(text: string): string {
  return wrapEncoded(encodeAscii(text));
}
