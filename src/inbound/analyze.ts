// What Postern learns from one received message before storing it: the SPF/DKIM/DMARC/ARC verdicts
// (with the Authentication-Results lines to prepend to the stored source) and the parsed fields,
// already serialized for the `parsed` column. A pure function of the bytes and the envelope plus
// DNS, so it can run on the event loop or in an analysis thread (analysis-pool.ts) with the same
// result.
import { createHash } from 'node:crypto';
import { inTurn } from '../lib/in-turn.js';
import { asBuffer } from '../lib/threads.js';
import { findSpan, tailSpan } from './body-spans.js';
import type { BodySpans, StoredParsed } from './received.js';
import { parseMessage } from './parse.js';
import { verifyMessage, type Lookup, type Verdicts } from './verify.js';

export interface AnalyzeInput {
  raw: Uint8Array;
  ip: string;
  helo: string;
  mailFrom: string;
  /** Our own hostname, the authserv-id of Authentication-Results. */
  mta: string;
  maxBodyBytes: number;
  maxParts: number;
  /** Trace lines (CRLF-terminated) to store between the Authentication-Results and the message. */
  trace?: string;
  /**
   * Bytes before `raw` in its memory that are free to write (SOURCE_HEADROOM from the SMTP
   * listener, receive.ts): the lines stored above the message are written there, not copied with it.
   */
  headroom?: number;
}

export interface Analysis {
  /** Header lines (CRLF-terminated) to prepend to the raw source. */
  authHeaders: string;
  /**
   * The source to store: the Authentication-Results lines, the trace and the message. In the memory
   * of `raw` when its headroom holds the lines, else in memory of its own; either way a thread
   * hands it back without a copy (analysis-pool.ts).
   */
  source: Uint8Array;
  subject: string;
  fromEmail: string;
  /**
   * What names this message among retries of it (store.ts): its Message-ID and a SHA-256 of the
   * bytes as the client sent them; null when it has no Message-ID (such mail is never taken for
   * a retry: two alerts alike from a script are two messages).
   */
  retryKey: string | null;
  /** JSON of StoredParsed: the `parsed` column. */
  parsedJson: string;
  /** Why the parsed fields are partial (the message is stored `truncated`), or null. */
  partial: string | null;
  /** The SPF/DKIM/DMARC/ARC verdicts (also inside parsedJson). */
  verdicts: Verdicts;
}

/**
 * Messages are parsed one after another, in the order their verification ended (lib/in-turn.ts):
 * mailparser parses as a stream over many turns of the event loop, and a hundred parses started
 * side by side would hold a hundred half-built trees at once for no gain in speed. Verification,
 * which waits on DNS, stays concurrent.
 */
const parseInTurn = inTurn();

export async function analyze(lookup: Lookup, input: AnalyzeInput): Promise<Analysis> {
  const raw = asBuffer(input.raw);
  const { verdicts, headers } = await verifyMessage(lookup, {
    raw,
    ip: input.ip,
    helo: input.helo,
    mailFrom: input.mailFrom,
    mta: input.mta,
  });
  const { subject, strippedReply, partial, textAt, ...fields } = await parseInTurn(() =>
    parseMessage(raw, { maxBodyBytes: input.maxBodyBytes, maxParts: input.maxParts }),
  );
  // Stored once: a reply that is the whole text (null: mail that quotes nothing) is derived when read,
  // and a body that is the source's own bytes is kept as where it is (body-spans.ts).
  const stored: StoredParsed = { ...fields, ...(strippedReply === null ? {} : { strippedReply }), headersUtf8: true, verdicts };
  const spans: BodySpans = {};
  // A plain text part's bytes are known to be the rest of the source: no search for them.
  const text = textAt === null ? findSpan(raw, fields.text) : tailSpan(raw, textAt, fields.text);
  if (text) {
    spans.text = text;
    stored.text = '';
  }
  const html = findSpan(raw, fields.html);
  if (html) {
    spans.html = html;
    stored.html = '';
  }
  if (text || html) stored.spans = spans;
  return {
    authHeaders: headers,
    source: storedSource(headers + (input.trace ?? ''), raw, input.headroom ?? 0),
    subject,
    fromEmail: fields.from.email,
    retryKey: fields.messageId ? `${fields.messageId} ${createHash('sha256').update(raw).digest('base64')}` : null,
    parsedJson: JSON.stringify(stored),
    partial,
    verdicts,
  };
}

function storedSource(lines: string, raw: Buffer, headroom: number): Buffer {
  const length = Buffer.byteLength(lines);
  if (length <= headroom) {
    const out = Buffer.from(raw.buffer, raw.byteOffset - length, length + raw.length);
    out.write(lines, 0, 'utf8');
    return out;
  }
  const head = Buffer.from(lines, 'utf8');
  const out = Buffer.allocUnsafeSlow(head.length + raw.length);
  head.copy(out, 0);
  raw.copy(out, head.length);
  return out;
}
