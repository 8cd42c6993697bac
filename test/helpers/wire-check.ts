// The invariants of a whole message, checked on the bytes that crossed the wire by tools Postern
// did not write (test/helpers/wire_check.py: Python's `email` with policy=default, and dkimpy):
// - it parses with zero defects, with exactly one From, To (or Cc), Subject, Date, Message-ID and
//   MIME-Version, and no Bcc;
// - the decoded subject, addresses, text, html and attachments are what was sent;
// - its DKIM-Signature verifies against the published key, and `h=` covers from, to, subject,
//   date and message-id; an ARC set, when expected, verifies;
// - no line is over 998 octets, no CR or LF is bare, and 8-bit bytes appear only when the peer
//   offered 8BITMIME.
// Every new content feature gets these checks by sending through its path and calling `check`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export interface ExpectedMessage {
  from: { address: string; name: string };
  to: string[];
  cc: string[];
  replyTo?: string | null;
  subject: string;
  /** The text/plain body, line endings as sent; null when it is not the sender's (made from html). */
  text: string | null;
  /** The text/html body; null when it is not checked (tracking rewrote it: compare it yourself). */
  html: string | null;
  attachments: { filename: string; contentType: string; content: string }[];
  /** Whether the receiving peer offered 8BITMIME. */
  eightBit: boolean;
  /** The d= of the DKIM signature that must verify; null when the message is not Postern's to sign. */
  dkimDomain: string | null;
  /** An ARC set that must verify (forwarded mail). */
  arc?: boolean;
}

export interface WireFacts {
  crash?: string;
  defects: string[];
  counts: Record<string, number>;
  headers: Record<string, string>;
  addresses: Record<string, [string, string][]>;
  contentType: string;
  bodies: { type: string; content: string }[];
  attachments: { filename: string | null; contentType: string; content: string }[];
  dkim: { d: string; s: string; a: string; h: string[]; verified: boolean; error?: string }[];
  arc: { result: string; comment?: string };
  lines: { longest: number; bareLineEnding: number; eightBit: number; endsWithCrlf: boolean };
}

export interface WireChecker {
  /** What the checkers found in the bytes. */
  facts(raw: Buffer): Promise<WireFacts>;
  /** The invariants that do not hold, each as a sentence; empty when the message is whole. */
  check(raw: Buffer, expected: ExpectedMessage): Promise<string[]>;
  /** Publishes a DKIM key (`selector._domainkey.domain` → TXT value) for the verifiers. */
  publish(name: string, txt: string): void;
}

const SCRIPT = fileURLToPath(new URL('./wire_check.py', import.meta.url));
// Debian's python3-dkim is installed for the system's interpreter, not for a pyenv one on PATH.
const PYTHON = '/usr/bin/python3';

/** Line endings as they go on the wire (the composer's canonical form: every CR, LF or CRLF as one line break). */
const lines = (s: string) => s.replace(/\r\n|\r|\n/g, '\n');

/**
 * Whether a decoded body is what was sent. A message always ends with a line break on the wire
 * (SMTP's end of data is CRLF.CRLF), so a body that is the last part of a message and does not end
 * with one gains it; nothing else may differ.
 */
const sameBody = (got: string, sent: string) => got === sent || (!sent.endsWith('\n') && got === `${sent}\n`);

/** Where two strings part, shown around that place. */
function difference(got: string, sent: string): string {
  let i = 0;
  while (i < got.length && got[i] === sent[i]) i++;
  const around = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 40), i + 40));
  return `at character ${i} of ${sent.length}: got ${around(got)} (${got.length}), sent ${around(sent)}`;
}

/** Starts one checker process for a test file; it stops at teardown. */
export function startWireChecker(t: { teardown(fn: () => unknown): void }): WireChecker {
  const child = spawn(PYTHON, [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const pending: { resolve(f: WireFacts): void; reject(e: Error): void }[] = [];
  const failAll = (why: string) => {
    for (const p of pending.splice(0)) p.reject(new Error(why));
  };
  child.on('error', (err) => failAll(`${PYTHON} ${SCRIPT}: ${err.message} (apt-get install python3-dkim)`));
  child.on('exit', (code) => failAll(`the wire checker exited with ${code}: ${stderr.slice(-2000)}`));
  createInterface({ input: child.stdout }).on('line', (line) => pending.shift()?.resolve(JSON.parse(line) as WireFacts));
  t.teardown(() => {
    child.stdin.end();
    return new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
  });
  const keys: Record<string, string> = {};

  const facts = (raw: Buffer) =>
    new Promise<WireFacts>((resolve, reject) => {
      pending.push({ resolve, reject });
      child.stdin.write(`${JSON.stringify({ raw: raw.toString('base64'), keys })}\n`);
    });

  return {
    facts,
    publish(name, txt) {
      keys[name.toLowerCase()] = txt;
    },
    async check(raw, expected) {
      const f = await facts(raw);
      if (f.crash) return [`the checker crashed: ${f.crash}`];
      return problemsOf(f, expected);
    },
  };
}

/** The invariants `f` breaks, given what was sent. */
function problemsOf(f: WireFacts, e: ExpectedMessage): string[] {
  const out: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) out.push(what);
  };
  for (const d of f.defects) out.push(`defect: ${d}`);

  for (const name of ['from', 'subject', 'date', 'message-id', 'mime-version'])
    expect(f.counts[name] === 1, `${name}: ${f.counts[name]} fields, not exactly one`);
  expect(f.counts.to === 1 || (f.counts.to === 0 && f.counts.cc === 1), `to: ${f.counts.to} fields (cc ${f.counts.cc})`);
  expect(f.counts.bcc === 0, `bcc: ${f.counts.bcc} fields on the wire`);
  expect(f.headers['mime-version'] === '1.0', `MIME-Version: ${f.headers['mime-version']}`);

  const addr = (name: string) => (f.addresses[name] ?? []).map(([, a]) => a.toLowerCase());
  const [fromName, fromAddress] = f.addresses.from?.[0] ?? ['', ''];
  expect(fromAddress.toLowerCase() === e.from.address.toLowerCase(), `from address ${fromAddress}, sent ${e.from.address}`);
  expect(fromName === e.from.name, `from name ${JSON.stringify(fromName)}, sent ${JSON.stringify(e.from.name)}`);
  expect(
    JSON.stringify(addr('to')) === JSON.stringify(e.to.map((a) => a.toLowerCase())),
    `to ${addr('to').join(', ')}, sent ${e.to.join(', ')}`,
  );
  expect(
    JSON.stringify(addr('cc')) === JSON.stringify(e.cc.map((a) => a.toLowerCase())),
    `cc ${addr('cc').join(', ')}, sent ${e.cc.join(', ')}`,
  );
  if (e.replyTo !== undefined)
    expect(
      JSON.stringify(addr('reply-to')) === JSON.stringify(e.replyTo ? [e.replyTo.toLowerCase()] : []),
      `reply-to ${addr('reply-to').join(', ')}`,
    );
  const subject = e.subject.replace(/\r\n|\r|\n/g, ' ');
  expect(f.headers.subject === subject, `subject ${JSON.stringify(f.headers.subject)}, sent ${JSON.stringify(subject)}`);

  const body = (type: string) => f.bodies.filter((b) => b.type === type);
  if (e.text !== null) {
    const got = body('text/plain');
    if (!e.text) expect(got.length === 0, `a text/plain part that was not sent`);
    else if (got.length !== 1) out.push(`${got.length} text/plain body parts, not one`);
    else expect(sameBody(lines(got[0].content), lines(e.text)), `text differs: ${difference(lines(got[0].content), lines(e.text))}`);
  }
  if (e.html !== null) {
    const got = body('text/html');
    if (!e.html) expect(got.length === 0, `a text/html part that was not sent`);
    else if (got.length !== 1) out.push(`${got.length} text/html body parts, not one`);
    else expect(sameBody(lines(got[0].content), lines(e.html)), `html differs: ${difference(lines(got[0].content), lines(e.html))}`);
  }
  expect(f.attachments.length === e.attachments.length, `${f.attachments.length} attachments, sent ${e.attachments.length}`);
  e.attachments.forEach((a, i) => {
    const got = f.attachments[i];
    if (!got) return;
    const name = a.filename.replace(/\r\n|\r|\n/g, ' ');
    expect(got.filename === name, `attachment ${i} filename ${JSON.stringify(got.filename)}, sent ${JSON.stringify(name)}`);
    expect(got.contentType === a.contentType.toLowerCase(), `attachment ${i} type ${got.contentType}, sent ${a.contentType}`);
    expect(Buffer.from(got.content, 'base64').equals(Buffer.from(a.content, 'base64')), `attachment ${i} content differs`);
  });

  if (e.dkimDomain) {
    const sig = f.dkim.find((s) => s.d === e.dkimDomain);
    if (!sig) out.push(`no DKIM-Signature with d=${e.dkimDomain} (found ${f.dkim.map((s) => s.d).join(', ') || 'none'})`);
    else {
      expect(sig.verified, `DKIM-Signature d=${sig.d} does not verify${sig.error ? `: ${sig.error}` : ''}`);
      for (const h of ['from', 'to', 'subject', 'date', 'message-id'])
        if (h !== 'to' || f.counts.to) expect(sig.h.includes(h), `DKIM h= does not cover ${h} (h=${sig.h.join(':')})`);
    }
  }
  if (e.arc) expect(f.arc.result === 'pass', `ARC: ${f.arc.result} ${f.arc.comment ?? ''}`);

  expect(f.lines.longest <= 998, `a line of ${f.lines.longest} octets (over 998)`);
  expect(f.lines.bareLineEnding === -1, `a bare CR or LF at octet ${f.lines.bareLineEnding}`);
  if (!e.eightBit) expect(f.lines.eightBit === -1, `an 8-bit byte at octet ${f.lines.eightBit}, and the peer did not offer 8BITMIME`);
  return out;
}
