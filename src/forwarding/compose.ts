// What a forward puts on the wire: the received source byte for byte, below two trace headers
// (a Received line and X-Postern-Forwarded, which is also how a loop is recognised) and an ARC
// set (mailauth sealMessage) that records the authentication results Postern saw on arrival, so
// the next receiver can trust SPF/DKIM/DMARC that forwarding itself breaks.
import type * as Mailauth from 'mailauth';
import { lazyRequire } from '../lib/lazy.js';
import { crlfLineEndings } from '../channels/email/index.js';
import type { ArcKey } from './keys.js';

const mailauth = lazyRequire<typeof Mailauth>('mailauth');

const FORWARD_HEADER = 'X-Postern-Forwarded';

/** The header block of a raw message (up to the first empty line), unfolded, as [name, value] pairs. */
function headerLines(raw: Buffer): [string, string][] {
  const text = raw.toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const block = end === -1 ? text : text.slice(0, end);
  const out: [string, string][] = [];
  for (const line of block.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length) out[out.length - 1][1] += ' ' + line.trim();
    else {
      const i = line.indexOf(':');
      if (i > 0) out.push([line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim()]);
    }
  }
  return out;
}

/** Why forwarding this source would loop, or null. */
export function loopReason(raw: Buffer, hostname: string, maxHops: number): string | null {
  const headers = headerLines(raw);
  const ours = headers.find(([n, v]) => n === FORWARD_HEADER.toLowerCase() && v.toLowerCase().includes(`by ${hostname.toLowerCase()}`));
  if (ours) return `mail loop: already forwarded by ${hostname} (${FORWARD_HEADER}: ${ours[1]})`;
  const hops = headers.filter(([n]) => n === 'received').length;
  if (hops >= maxHops) return `mail loop: ${hops} Received headers (limit ${maxHops})`;
  return null;
}

export interface ForwardInput {
  raw: Buffer;
  receivedId: string;
  messageId: string;
  to: string;
  hostname: string;
  date: Date;
  arc: { domain: string; selector: string; key: ArcKey; cv: 'none' | 'pass' | 'fail' };
}

/** The source with trace headers added and ARC-sealed. */
export async function composeForward(input: ForwardInput): Promise<Buffer> {
  const trace = Buffer.from(
    `Received: by ${input.hostname} (Postern) with forwarding id ${input.messageId}\r\n\tfor <${input.to}>; ${input.date.toUTCString().replace('GMT', '+0000')}\r\n` +
      `${FORWARD_HEADER}: ${input.receivedId} by ${input.hostname} for <${input.to}>\r\n`,
  );
  // The SMTP listener stores only sources whose lines all end in CRLF; the canonical form is kept
  // here too, so a forward can never carry a bare line ending whatever its source (SMTP smuggling).
  const traced = Buffer.concat([trace, crlfLineEndings(input.raw)]);
  // The Authentication-Results the receiving side prepended holds what the seal attests.
  const ar = headerLines(input.raw).find(
    ([n, v]) => n === 'authentication-results' && v.toLowerCase().startsWith(input.hostname.toLowerCase()),
  );
  const authResults = ar ? ar[1] : `${input.hostname}; none`;
  const seal = await mailauth().sealMessage(traced, {
    // The signing time given, not left to mailauth: it reads the clock once to sign the
    // ARC-Message-Signature and again to write it, and when a second turns between the two reads
    // the t= written is not the one signed, so about one seal in five hundred did not verify.
    signTime: input.date,
    signingDomain: input.arc.domain,
    selector: input.arc.selector,
    privateKey: input.arc.key.privateKey,
    authResults,
    cv: input.arc.cv,
  });
  return Buffer.concat([seal, traced]);
}
