// A small SMTP client on a raw socket for the benchmarks: no parsing beyond reply codes and the
// EHLO keywords, so the load generator's own CPU stays small on a shared 2-core machine, and the
// same client can be pointed at Postern and at Postfix (smtp-source cannot AUTH). One instance is
// one session; `send` may be called again on the same session (reused connections). Optional
// STARTTLS and AUTH PLAIN, once per session as a submission client does them; `sendPipelined`
// puts a transaction in two writes (RFC 2920) where `send` waits for each reply in turn, so the
// two together say what a client's round trips cost.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';

export interface ClientOptions {
  /** STARTTLS after the first EHLO (certificate not verified: the peers are throwaway), then EHLO again. */
  starttls?: boolean;
  /** AUTH PLAIN after STARTTLS (or after EHLO without it). */
  auth?: { user: string; pass: string };
}

export class Client {
  private buf = '';
  private wait: ((line: string) => void) | null = null;
  /** The EHLO keywords of the last EHLO (after STARTTLS, the second one's). */
  private extensions = new Set<string>();
  private constructor(private socket: net.Socket) {
    this.listen(socket);
  }
  private listen(socket: net.Socket) {
    this.socket = socket;
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      this.buf += d;
      this.pump();
    });
    socket.on('error', () => {});
  }
  private pump() {
    if (!this.wait) return;
    const m = /^(?:\d{3}-[^\n]*\n)*(\d{3}) [^\n]*\n/.exec(this.buf);
    if (!m) return;
    this.buf = this.buf.slice(m[0].length);
    const w = this.wait;
    this.wait = null;
    w(m[0]);
  }
  /** Opens a session on 127.0.0.1: greeting, EHLO, and STARTTLS and AUTH when asked. */
  static async open(port: number, opts: ClientOptions = {}): Promise<Client> {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const c = new Client(socket);
    await c.expect(220);
    await c.ehlo();
    if (opts.starttls) {
      await c.cmd('STARTTLS', 220);
      // The server says nothing more until the handshake, so nothing is left in the plain buffer.
      socket.removeAllListeners('data');
      const secure = tls.connect({ socket, rejectUnauthorized: false });
      await new Promise<void>((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject));
      c.listen(secure);
      await c.ehlo();
    }
    if (opts.auth) await c.cmd(`AUTH PLAIN ${Buffer.from(`\0${opts.auth.user}\0${opts.auth.pass}`).toString('base64')}`, 235);
    return c;
  }
  private async ehlo() {
    const p = this.reply();
    this.socket.write('EHLO bench.example.org\r\n');
    const reply = await p;
    if (!reply.startsWith('250')) throw new Error(reply.trim());
    this.extensions = new Set(reply.split('\n').map((l) => l.slice(4).split(' ')[0].trim().toUpperCase()));
  }
  /** The next reply, whole (multi-line replies joined). */
  private reply(): Promise<string> {
    return new Promise((resolve) => {
      this.wait = resolve;
      this.pump();
    });
  }
  expect(code: number): Promise<void> {
    return this.reply().then((reply) => {
      if (!reply.startsWith(String(code))) throw new Error(reply.trim());
    });
  }
  cmd(line: string, code: number): Promise<void> {
    const p = this.expect(code);
    this.socket.write(line + '\r\n');
    return p;
  }
  /** One transaction, a reply waited for at each step. `head`, when given, is written before `body` (a trace field that makes each copy a new message). */
  async send(to: string, body: Buffer, head?: string): Promise<void> {
    await this.cmd('MAIL FROM:<sender@bench.example.org>', 250);
    await this.cmd(`RCPT TO:<${to}>`, 250);
    await this.cmd('DATA', 354);
    const p = this.expect(250);
    if (head) this.socket.write(head);
    this.socket.write(body);
    this.socket.write('.\r\n');
    await p;
  }
  /**
   * One transaction in two round trips (RFC 2920): MAIL, RCPT and DATA in one write, their replies
   * read in order, then the body and its "." in one write. A refusal anywhere rejects, after RSET
   * when the transaction was left open, so the session stays usable. `body` is dot-stuffed already.
   */
  async sendPipelined(from: string, to: string[], body: Buffer): Promise<void> {
    if (!this.extensions.has('PIPELINING')) throw new Error('the server does not offer PIPELINING');
    this.socket.write([`MAIL FROM:<${from}>`, ...to.map((r) => `RCPT TO:<${r}>`), 'DATA', ''].join('\r\n'));
    const replies: string[] = [];
    for (let i = 0; i < to.length + 2; i++) replies.push(await this.reply());
    const data = replies[replies.length - 1];
    if (data.startsWith('354')) {
      // DATA was accepted, so every recipient that was not refused gets the message.
      this.socket.write(Buffer.concat([body, Buffer.from('.\r\n')]));
      replies.push(await this.reply());
    } else if (replies[0].startsWith('250')) {
      await this.cmd('RSET', 250);
    }
    const refused = replies.find((r, i) => !r.startsWith(i === to.length + 1 ? '354' : '250'));
    if (refused) throw new Error(refused.trim());
  }
  close() {
    this.socket.end('QUIT\r\n');
    this.socket.destroy();
  }
}

export type MessageForm = 'plain' | 'alternative' | 'mixed';

/**
 * A message of about `size` bytes. `plain`: one text/plain part (what scripts and notifications
 * send). `alternative`: multipart/alternative with a text and an HTML half (what mail clients and
 * most senders send), which Postern parses whole. `mixed`: what people send with a file, as mail
 * clients write it: multipart/mixed holding multipart/alternative (text, and quoted-printable HTML
 * of 8 KiB or a fifth of the size, whichever is less) and a base64 PDF attachment for the rest.
 */
export function message(size: number, to: string, form: MessageForm = 'plain'): Buffer {
  const id = `<${Math.random()}@bench.example.org>`;
  const head = `From: Bench <sender@bench.example.org>\r\nTo: ${to}\r\nSubject: bench message\r\nMessage-ID: ${id}\r\nMIME-Version: 1.0\r\n`;
  const line = 'The quick brown fox jumps over the lazy dog, again and again and again.\r\n';
  const fill = (bytes: number, wrap: (l: string) => string) => {
    let out = '';
    while (out.length < bytes) out += wrap(line);
    return out;
  };
  if (form === 'plain') {
    const top = `${head}Content-Type: text/plain; charset=utf-8\r\n\r\n`;
    return Buffer.from(top + fill(size - top.length, (l) => l));
  }
  if (form === 'mixed') return mixed(size, head);
  const half = Math.max(0, (size - head.length) / 2 - 200);
  return Buffer.from(
    `${head}Content-Type: multipart/alternative; boundary="b1"\r\n\r\n` +
      `--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${fill(half, (l) => l)}` +
      `--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body>\r\n${fill(half, (l) => `<p>${l.trimEnd()}</p>\r\n`)}</body></html>\r\n` +
      `--b1--\r\n`,
  );
}

function mixed(size: number, head: string): Buffer {
  const text = "Hello,\r\n\r\nthe report for this month is attached. The figures are up on last month's.\r\n\r\n-- \r\nBench\r\n";
  // Quoted-printable HTML as mail clients write it: soft line breaks at 76, =3D for every `=`.
  const cell = '<td style=3D"padding:4px;border:1px solid #ccc;font-family:Arial,sans-serif">f=\r\nigure</td>';
  const htmlBytes = Math.min(8 * 1024, Math.floor(size / 5));
  let html = '<html><head><meta http-equiv=3D"Content-Type" content=3D"text/html; charset=3Dutf-8"></head><body>=\r\n<table>';
  while (html.length < htmlBytes) html += `<tr>${cell}${cell}</tr>=\r\n`;
  html += '</table></body></html>\r\n';
  // A PDF's bytes: random, so neither side can compress or skip them; base64 in 76-column lines.
  const rest = Math.max(0, size - head.length - text.length - html.length - 900);
  const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(Math.floor((rest * 3) / 4))]);
  const b64 = pdf.toString('base64').replace(/.{76}/g, '$&\r\n');
  return Buffer.from(
    `${head}Content-Type: multipart/mixed; boundary="m1"\r\n\r\n` +
      `--m1\r\nContent-Type: multipart/alternative; boundary="a1"\r\n\r\n` +
      `--a1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n${text}` +
      `--a1\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n${html}` +
      `--a1--\r\n` +
      `--m1\r\nContent-Type: application/pdf; name="report.pdf"\r\nContent-Disposition: attachment; filename="report.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}${b64.endsWith('\r\n') ? '' : '\r\n'}` +
      `--m1--\r\n`,
  );
}
