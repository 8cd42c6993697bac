// The bounds of a received message's header block (`smtp.maxHeaderBytes`, Postfix's
// header_size_limit of 102400; `smtp.maxHeaderLines`), checked on the DATA stream as it arrives:
// every parser after the listener (mailauth's canonicalisation, mailparser's header split) does
// work per header line, and a header folded over 100,000 lines kept one busy for longer than a
// sender waits. The block ends at the first empty line; folded lines count one each. Once a bound
// is crossed the listener keeps nothing more of the message and refuses it after the final dot
// (SMTP has no reply during DATA), without parsing it.

export type HeaderExcess = { bound: 'bytes'; max: number } | { bound: 'lines'; max: number };

export interface HeaderBounds {
  /** Reads the next chunk of the message; returns the bound crossed, once, or null. */
  feed(chunk: Buffer): HeaderExcess | null;
  /** The header block has ended (or a bound was crossed): later chunks need not be fed. */
  readonly done: boolean;
}

const LF = 0x0a;
const CR = 0x0d;

/** A scanner of one message's header block: bytes (line ends included) and physical lines. */
export function headerBounds(maxBytes: number, maxLines: number): HeaderBounds {
  let bytes = 0;
  let lines = 0;
  // The line in progress across chunks: its length so far and its last byte.
  let lineLength = 0;
  let lastByte = -1;
  let done = false;
  const cross = (excess: HeaderExcess) => {
    done = true;
    return excess;
  };
  return {
    get done() {
      return done;
    },
    feed(chunk) {
      if (done) return null;
      let at = 0;
      while (at < chunk.length) {
        const lf = chunk.indexOf(LF, at);
        if (lf === -1) {
          bytes += chunk.length - at;
          lineLength += chunk.length - at;
          lastByte = chunk[chunk.length - 1];
          // A lone CR may still be the empty line that ends the block: wait for what follows it.
          const maybeEnd = lineLength === 1 && lastByte === CR;
          return bytes > maxBytes && !maybeEnd ? cross({ bound: 'bytes', max: maxBytes }) : null;
        }
        const length = lineLength + (lf - at);
        const beforeLf = lf > at ? chunk[lf - 1] : lastByte;
        bytes += lf - at + 1;
        lineLength = 0;
        lastByte = -1;
        at = lf + 1;
        // An empty line (CRLF, or a bare LF the listener refuses later) ends the block.
        if (length === 0 || (length === 1 && beforeLf === CR)) {
          done = true;
          return null;
        }
        if (bytes > maxBytes) return cross({ bound: 'bytes', max: maxBytes });
        if (++lines > maxLines) return cross({ bound: 'lines', max: maxLines });
      }
      return null;
    },
  };
}
