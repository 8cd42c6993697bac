// Shared setup for inbound tests: a loopback DNS server, a daemon pointed at it, SMTP clients.
import net from 'node:net';
import nodemailer from 'nodemailer';
import { bootDaemon, type TestDaemon } from './daemon.js';
import type { TestDb } from './databases.js';
import { startDnsServer, type DnsServer } from './dns-server.js';
import type { ManualClock } from './clock.js';

interface T {
  teardown(fn: () => unknown): void;
}

export interface InboundEnv {
  d: TestDaemon;
  dns: DnsServer;
  ws: { id: string; slug: string; live: string; test: string };
  shared: string;
}

export async function setup(
  t: T,
  opts: { db?: TestDb; env?: Record<string, string>; slug?: string; plan?: string; clock?: ManualClock; dataDir?: string } = {},
): Promise<InboundEnv> {
  const dns = await startDnsServer();
  t.teardown(() => dns.close());
  const d = await bootDaemon(t, {
    db: opts.db,
    clock: opts.clock,
    dataDir: opts.dataDir,
    env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DNS_TIMEOUT: '500ms', ...opts.env },
  });
  const slug = opts.slug ?? 'acme';
  const ws = await d.workspace(slug, { plan: opts.plan });
  return { d, dns, ws, shared: `${slug}.in.postern.test` };
}

export async function createAddress(env: InboundEnv, body: Record<string, unknown> = {}, key = env.ws.live) {
  const res = await env.d.request('POST', '/v1/inbound/addresses', { key, body });
  if (res.status !== 201) throw new Error(`address create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; address: string };
}

export function transport(port: number, extra: Record<string, unknown> = {}) {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    tls: { rejectUnauthorized: false },
    name: 'client.example.org',
    ...extra,
  } as never);
}

/** Sends raw RFC 822 text through nodemailer's SMTP client; resolves with the server's final reply. */
export async function sendRaw(port: number, envelope: { from: string; to: string[] }, raw: string | Buffer): Promise<string> {
  const info = await transport(port).sendMail({ envelope, raw });
  return info.response;
}

export function simpleMail(opts: { from?: string; to: string; subject?: string; body?: string; headers?: string }): string {
  return [
    `From: ${opts.from ?? 'Alice <alice@sender.example>'}`,
    `To: ${opts.to}`,
    `Subject: ${opts.subject ?? 'Hello'}`,
    `Message-ID: <${Math.random().toString(36).slice(2)}@sender.example>`,
    'Date: Mon, 02 Jan 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...(opts.headers ? [opts.headers] : []),
    '',
    opts.body ?? 'Hi there.',
    '',
  ].join('\r\n');
}

/** A minimal SMTP client on a raw socket, for protocol abuse. */
export class RawSmtp {
  private buf = '';
  private waiters: (() => void)[] = [];
  private constructor(private socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buf += d;
      for (const w of this.waiters.splice(0)) w();
    });
    socket.on('close', () => {
      for (const w of this.waiters.splice(0)) w();
    });
  }
  /** The server's first reply: its greeting, or the 421 it refused the connection with. */
  greeting = '';
  /** Connects from 127.0.0.1, or from `localAddress` (loopback has all of 127/8), and reads the greeting. */
  static async connect(port: number, opts: { localAddress?: string } = {}): Promise<RawSmtp> {
    const socket = net.connect({ port, host: '127.0.0.1', ...opts });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const c = new RawSmtp(socket);
    c.greeting = await c.reply();
    return c;
  }
  /** Resolves when the server closes the connection. */
  waitClose(): Promise<void> {
    return this.socket.destroyed ? Promise.resolve() : new Promise((resolve) => this.socket.once('close', () => resolve()));
  }
  get closed(): boolean {
    return this.socket.destroyed || this.socket.readyState === 'closed';
  }
  /** The next complete reply (last line "NNN "). */
  async reply(): Promise<string> {
    for (let i = 0; i < 1000; i++) {
      const m = /^(?:\d{3}-[^\n]*\n)*\d{3} [^\n]*\n/.exec(this.buf);
      if (m) {
        this.buf = this.buf.slice(m[0].length);
        return m[0].trim();
      }
      if (this.socket.destroyed) return '';
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    throw new Error('no reply');
  }
  write(data: string | Buffer): void {
    this.socket.write(data);
  }
  async cmd(line: string): Promise<string> {
    this.socket.write(line + '\r\n');
    return this.reply();
  }
  close(): void {
    this.socket.destroy();
  }
}
