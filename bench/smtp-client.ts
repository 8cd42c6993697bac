// A small SMTP client on a raw socket for the benchmarks: no STARTTLS, no parsing beyond reply
// codes, so the load generator's own CPU stays small on a shared 2-core machine. One instance is
// one session; `send` may be called again on the same session (reused connections).
import net from 'node:net';

export class Client {
  private buf = '';
  private wait: ((line: string) => void) | null = null;
  private constructor(private socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.setNoDelay(true);
    socket.on('data', (d: string) => {
      this.buf += d;
      this.pump();
    });
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
  static async open(port: number): Promise<Client> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const c = new Client(socket);
    socket.on('error', () => {});
    await c.expect(220);
    await c.cmd('EHLO bench.example.org', 250);
    return c;
  }
  expect(code: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.wait = (reply) => (reply.startsWith(String(code)) ? resolve() : reject(new Error(reply.trim())));
      this.pump();
    });
  }
  cmd(line: string, code: number): Promise<void> {
    const p = this.expect(code);
    this.socket.write(line + '\r\n');
    return p;
  }
  async send(to: string, body: Buffer): Promise<void> {
    await this.cmd('MAIL FROM:<sender@bench.example.org>', 250);
    await this.cmd(`RCPT TO:<${to}>`, 250);
    await this.cmd('DATA', 354);
    const p = this.expect(250);
    this.socket.write(body);
    this.socket.write('.\r\n');
    await p;
  }
  close() {
    this.socket.end('QUIT\r\n');
    this.socket.destroy();
  }
}

/**
 * A message of about `size` bytes. `plain`: one text/plain part (what scripts and notifications
 * send). `alternative`: multipart/alternative with a text and an HTML half (what mail clients and
 * most senders send), which Postern parses whole.
 */
export function message(size: number, to: string, form: 'plain' | 'alternative' = 'plain'): Buffer {
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
  const half = Math.max(0, (size - head.length) / 2 - 200);
  return Buffer.from(
    `${head}Content-Type: multipart/alternative; boundary="b1"\r\n\r\n` +
      `--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${fill(half, (l) => l)}` +
      `--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body>\r\n${fill(half, (l) => `<p>${l.trimEnd()}</p>\r\n`)}</body></html>\r\n` +
      `--b1--\r\n`,
  );
}
