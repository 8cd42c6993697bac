// Loopback fakes of provider APIs: a node:http (or https) server on port 0 that records each
// request and every connection made to it, and answers with whatever the test's handler returns.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { pino } from 'pino';
import { ManualClock } from './clock.js';
import { createResolver } from '../../src/lib/dns.js';
import type { TransportDeps } from '../../src/channels/provider.js';
import type { ResolvedConnection } from '../../src/channels/provider.js';
import type { Delivery, OutboundMessage } from '../../src/channel.js';
import { outboundMessage } from './outbound-message.js';
import type { Channel } from '../../src/contract/channels.js';

export interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface HttpFake {
  url: string;
  requests: Recorded[];
  /** TCP connections accepted so far (a refused destination makes none). */
  connections(): number;
  close(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function startHttpFake(
  t: Teardown,
  handler: (req: Recorded) => Answer | Promise<Answer>,
  opts: { tls?: { key: string; cert: string } } = {},
): Promise<HttpFake> {
  const requests: Recorded[] = [];
  let connections = 0;
  const listener = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec: Recorded = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
    requests.push(rec);
    const a = await handler(rec);
    const body = a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
    res.end(body);
  };
  const server = opts.tls
    ? https.createServer(opts.tls, (req, res) => void listener(req, res))
    : http.createServer((req, res) => void listener(req, res));
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.teardown(close);
  return { url, requests, connections: () => connections, close };
}

/**
 * What a provider transport is given, for tests that build one by hand. The fakes listen on
 * 127.0.0.1, which the SSRF guard refuses by default, so the channels' allow list admits it here
 * (as an operator would with `channels.allowList`); tests of the guard give their own `ssrf`.
 */
export function transportDeps(over: Partial<TransportDeps> & { clock?: ManualClock } = {}): TransportDeps & { clock: ManualClock } {
  return {
    clock: new ManualClock('2030-01-01T00:00:00Z'),
    log: pino({ level: 'silent' }),
    publicUrl: () => 'https://postern.example',
    timeoutMs: 5000,
    // Nothing here resolves names unless a test gives a resolver of its own.
    dns: createResolver(['127.0.0.1:9'], 200),
    ssrf: { allowPrivate: false, allowList: ['127.0.0.1'], settings: 'channels.allowPrivate or channels.allowList' },
    ...over,
  };
}

export function connection(
  channel: Channel,
  provider: string,
  settings: Record<string, string>,
  credentials: Record<string, string>,
): ResolvedConnection {
  return {
    id: '0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000',
    workspaceId: 'ws',
    env: 'live',
    channel,
    provider,
    name: provider,
    settings,
    secrets: Object.keys(credentials),
    credentials,
    createdAt: '2030-01-01T00:00:00.000Z',
    removedAt: null,
  };
}

export function delivery(channel: Channel, recipient: string, content: Delivery['content'], over: Partial<OutboundMessage> = {}): Delivery {
  return {
    message: outboundMessage({ channel, recipient, ...over }),
    content,
  };
}

/** Verifies a compact JWS (ES256 or RS256) and returns its header and claims; throws if it does not verify. */
export function verifyJwt(jwt: string, key: KeyObject | string): { header: any; claims: any } {
  const [h, c, s] = jwt.split('.');
  const header = JSON.parse(Buffer.from(h, 'base64url').toString());
  const k = typeof key === 'string' ? createPublicKey(key) : key;
  const ok =
    header.alg === 'ES256'
      ? verify('sha256', Buffer.from(`${h}.${c}`), { key: k, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'))
      : verify('sha256', Buffer.from(`${h}.${c}`), k, Buffer.from(s, 'base64url'));
  if (!ok) throw new Error('JWT signature does not verify');
  return { header, claims: JSON.parse(Buffer.from(c, 'base64url').toString()) };
}
