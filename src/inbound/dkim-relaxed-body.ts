// mailauth's relaxed body canonicalization (RelaxedHash.update) looks at every byte of the body in
// JavaScript to find the lines it must rewrite: those with a tab, two blanks in a row, a blank
// before the line break, or an LF without a CR before it. Most lines have none of them (base64 has
// no blank at all), and mailauth hashes the lines between two it rewrites as one piece as they
// stand. This update finds the lines to rewrite with native searches, pushes the lines between
// them as mailauth would, and hands each line to rewrite to mailauth's own update: a piece that
// ends with a line break is read alike alone or with what follows it. The last line without its
// line break, a signature with an l= limit, and a chunk with more than 16 lines to rewrite go to
// mailauth whole.
// test/inbound/dkim-relaxed-body.test.ts holds the two side by side on generated bodies and chunks.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface RelaxedHash {
  byteLength: number;
  maxBodyLength?: number;
  maxSizeReached: boolean;
  remainder: Buffer | false;
  bodyHashedBytes: number;
  _pushBodyHash(chunk: Buffer): void;
  _updateBodyHash(chunk: Buffer): void;
  update: (this: RelaxedHash, chunk: Buffer | null, final?: boolean) => void;
}

const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;

/**
 * Where the first line of `chunk` from `from` on that mailauth's loop would rewrite has what makes
 * it so (a tab, two blanks in a row, a blank before CRLF, an LF without a CR before it); -1 when no
 * line would be rewritten.
 */
export function firstRewrite(chunk: Buffer, from = 0): number {
  let first = -1;
  const take = (at: number) => {
    if (at !== -1 && (first === -1 || at < first)) first = at;
  };
  take(chunk.indexOf(TAB, from));
  take(chunk.indexOf('  ', from));
  take(chunk.indexOf(' \r\n', from));
  const end = first === -1 ? chunk.length : first;
  for (let i = chunk.indexOf(LF, from); i !== -1 && i < end; i = chunk.indexOf(LF, i + 1)) {
    if (i === 0 || chunk[i - 1] !== CR) return i;
  }
  return first;
}

/** Past this many rewritten lines in one chunk, the rest of it goes to mailauth's loop whole. */
const MOST_REWRITES = 16;

let installed = false;

/** Puts the update above in mailauth's place (once; call after loading mailauth). */
export function installRelaxedBody(): void {
  if (installed) return;
  const { RelaxedHash } = require('mailauth/lib/dkim/body/relaxed') as { RelaxedHash: { prototype: RelaxedHash } };
  const original = RelaxedHash.prototype.update;
  RelaxedHash.prototype.update = function update(this: RelaxedHash, chunk: Buffer | null, final?: boolean): void {
    // With an l= limit, mailauth stops at a chunk's start only: its chunks are its own.
    if (this.maxSizeReached || typeof this.maxBodyLength === 'number') return original.call(this, chunk, final);
    const rest = this.remainder && this.remainder.length ? this.remainder : null;
    const whole = rest ? (chunk ? Buffer.concat([rest, chunk]) : rest) : chunk;
    if (!whole || whole.length === 0) return original.call(this, chunk, final);
    this.byteLength += chunk?.length ?? 0;
    this.remainder = false;
    // mailauth's loop pushes the lines it leaves as they are as one piece, up to the line break
    // before a line it rewrites, and a piece that ends with a line break is read alike whether it
    // comes alone or with what follows: so the lines to rewrite go to mailauth's own update one
    // at a time, and the lines between them are pushed here.
    const lastLf = whole.lastIndexOf(LF);
    let at = 0;
    for (let rewrites = 0; at < whole.length; rewrites++) {
      const found = rewrites < MOST_REWRITES ? firstRewrite(whole, at) : at;
      if (found === -1) break;
      // A line to rewrite after the last line break makes mailauth rewrite every line it has not
      // pushed yet (its flag is still up when the chunk ends): all of that is mailauth's.
      const bad = found > lastLf ? at : found;
      // (lastIndexOf counts a negative offset from the end.)
      const lineStart = bad === 0 ? 0 : Math.max(at, whole.lastIndexOf(LF, bad - 1) + 1);
      if (lineStart > at) this._pushBodyHash(whole.subarray(at, lineStart));
      const lineEnd = rewrites < MOST_REWRITES && found <= lastLf ? whole.indexOf(LF, bad) : -1;
      // The rest (a last line without its line break, or everything past the limit) is mailauth's,
      // and so is ending the body when it takes the last byte.
      const last = lineEnd === -1 ? whole.length : lineEnd + 1;
      this.byteLength -= last - lineStart;
      original.call(this, whole.subarray(lineStart, last), final && last === whole.length);
      at = last;
      if (at === whole.length) return;
    }
    // No line left to rewrite: up to the last line break as it stands, the rest kept or ended.
    if (lastLf >= at) this._pushBodyHash(whole.subarray(at, lastLf + 1));
    const open = whole.subarray(Math.max(at, lastLf + 1));
    if (!final) {
      if (open.length > 0) this.remainder = open;
      return;
    }
    if (open.length > 0) this._pushBodyHash(open);
    if (this.bodyHashedBytes) this._updateBodyHash(Buffer.from([CR, LF]));
  };
  installed = true;
}
