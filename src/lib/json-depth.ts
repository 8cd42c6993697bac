// One nesting limit for every JSON text Postern takes from outside (request bodies on /v1 and
// /dashboard/api, signed provider callbacks, the dashboard's preview vars), checked on the raw
// text before it is parsed. V8's JSON.parse is iterative and takes any depth, but much of what
// runs after it recurses — JSON.stringify when a send is stored, a structured clone to a thread,
// a reviver — and overflows the stack a few thousand levels down (a 500, or a thread lost). The
// scan is linear, recursion-free and skips strings with indexOf, so an attachment's base64 costs
// next to nothing; it does not validate the text, JSON.parse does that after it. 64 levels is
// System.Text.Json's default; real bodies nest a handful (vars of a template, a push's data).
import { AppError, invalidBody } from './errors.js';

/** The deepest a JSON text may nest, counting every object and array (`{"a":[1]}` is 2). */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = [0x5b, 0x7b]; // [ {
const CLOSE = [0x5d, 0x7d]; // ] }

/**
 * Whether the UTF-8 JSON text nests deeper than `max` (brackets inside strings are text). Any
 * ASCII-compatible text works; UTF-16 and UTF-32 must be decoded to a string first.
 */
export function nestsDeeperThan(text: Uint8Array | string, max = MAX_JSON_DEPTH): boolean {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : Buffer.from(text.buffer, text.byteOffset, text.byteLength);
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      // The string ends at the next quote preceded by an even run of backslashes. Each run is
      // walked once, by the quote right after it, so the scan stays linear.
      let end = i;
      for (;;) {
        end = bytes.indexOf(QUOTE, end + 1);
        if (end === -1) return false; // unterminated: JSON.parse refuses it
        let k = end - 1;
        while (bytes[k] === BACKSLASH) k--;
        if ((end - 1 - k) % 2 === 0) break;
      }
      i = end;
    } else if (c === OPEN[0] || c === OPEN[1]) {
      if (++depth > max) return true;
    } else if (c === CLOSE[0] || c === CLOSE[1]) {
      depth--;
    }
  }
  return false;
}

const deeperMessage = (max: number) => `JSON nested deeper than ${max} levels (the limit)`;

/** The 422 of a request body nested past the limit (the error envelope names the limit). */
export const bodyTooDeep = (max = MAX_JSON_DEPTH): AppError => invalidBody([{ path: '', message: deeperMessage(max) }]);

/** The 400 of a JSON text in a query parameter nested past the limit. */
export const paramTooDeep = (name: string, max = MAX_JSON_DEPTH): AppError =>
  new AppError('invalid_request', `${name}: ${deeperMessage(max)}`);
