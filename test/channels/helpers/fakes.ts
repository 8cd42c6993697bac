// Loopback fakes of provider APIs: a node:http server on port 0 that records each request and
// answers with whatever the test's handler returns.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { pino } from 'pino';
import { ManualClock } from '../../../src/lib/clock.js';
import type { TransportDeps } from '../../../src/connections/transport-deps.js';
import type { ResolvedConnection } from '../../../src/connections/store.js';
import type { Channel } from '../../../src/templates/render.js';
import type { Delivery, OutboundMessage } from '../../../src/outbound/channels/channel.js';
import { outboundMessage } from '../../helpers/outbound-message.js';

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
  close(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function startHttpFake(t: Teardown, handler: (req: Recorded) => Answer | Promise<Answer>): Promise<HttpFake> {
  const requests: Recorded[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec: Recorded = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
    requests.push(rec);
    const a = await handler(rec);
    const body = a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.teardown(close);
  return { url, requests, close };
}

export function transportDeps(clock = new ManualClock('2030-01-01T00:00:00Z')): TransportDeps & { clock: ManualClock } {
  return { clock, log: pino({ level: 'silent' }), publicUrl: () => 'https://postern.example', timeoutMs: 5000 };
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
