// A webhook receiver on loopback for tests: records every request, answers as the test says, and
// verifies Standard Webhooks signatures with its own implementation of the scheme (deliberately
// not importing src/webhooks/signing.ts, so a mistake there cannot hide itself).
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
}

/** What to do with one request: a status to answer with, or 'hang' to never answer. */
export type Behaviour = (req: Received, n: number) => number | 'hang' | Promise<number | 'hang'>;

export interface Receiver {
  url: string;
  port: number;
  requests: Received[];
  /** Distinct webhook-ids processed with a 2xx (a receiver's deduplication). */
  processed: Map<string, Received>;
  behaviour: Behaviour;
  /** Requests currently held open ('hang'). */
  hanging: number;
  maxHanging: number;
  /** Resolves once `n` requests in all have arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  /** Resolves once `pred` holds, checked after every request and every answer. */
  until(pred: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Answers every held request with this status. */
  release(status?: number): void;
  close(): Promise<void>;
}

/** Independent Standard Webhooks verification; returns true when any v1 signature matches. */
export function verify(secret: string, r: { id: string; timestamp: string; signature: string; body: string }): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key)
    .update(r.id + '.' + r.timestamp + '.' + r.body)
    .digest();
  return r.signature.split(' ').some((part) => {
    const [version, sig] = part.split(',');
    if (version !== 'v1' || !sig) return false;
    const got = Buffer.from(sig, 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}

export async function startReceiver(behaviour: Behaviour = () => 200): Promise<Receiver> {
  const held: http.ServerResponse[] = [];
  const waiters: { pred: () => boolean; resolve: () => void }[] = [];
  const check = () => {
    for (const w of [...waiters])
      if (w.pred()) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: any;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const r: Received = {
        id: String(req.headers['webhook-id']),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        headers: req.headers,
        body,
        json,
      };
      rec.requests.push(r);
      check();
      const answer = await rec.behaviour(r, rec.requests.length);
      if (answer === 'hang') {
        rec.hanging += 1;
        rec.maxHanging = Math.max(rec.maxHanging, rec.hanging);
        held.push(res);
        res.on('close', () => (rec.hanging -= 1));
        check();
        return;
      }
      if (answer >= 200 && answer < 300 && !rec.processed.has(r.id)) rec.processed.set(r.id, r);
      res.statusCode = answer;
      if (answer >= 300 && answer < 400) res.setHeader('location', 'http://127.0.0.1:1/elsewhere');
      res.end('ok');
      check();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const rec: Receiver = {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    requests: [],
    processed: new Map(),
    behaviour,
    hanging: 0,
    maxHanging: 0,
    waitFor(n, timeoutMs = 20_000) {
      return rec.until(() => rec.requests.length >= n, `${n} requests`, timeoutMs);
    },
    until(pred, what, timeoutMs = 20_000) {
      if (pred()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`receiver: timed out waiting for ${what} (${rec.requests.length} requests so far)`)),
          timeoutMs,
        );
        waiters.push({ pred, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    release(status = 200) {
      for (const res of held.splice(0)) {
        if (!res.writableEnded && !res.destroyed) {
          res.statusCode = status;
          res.end('late');
        }
      }
    },
    close: () =>
      new Promise((resolve) => {
        rec.release(503);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return rec;
}
