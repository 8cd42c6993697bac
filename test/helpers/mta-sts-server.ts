// A loopback HTTPS server playing every `mta-sts.<domain>` host: it presents, per server name
// (SNI), a certificate from the test CA for that name (or whatever the test says), and serves the
// policy the test sets for the domain at /.well-known/mta-sts.txt. A domain's answer can be
// anything a broken or hostile policy host sends: another status, a redirect, another media type,
// an endless body.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import type { TestCa } from './self-signed.js';

export type PolicyAnswer =
  | { policy: string; contentType?: string }
  | { status: number; location?: string }
  /** A body larger than any policy may be. */
  | { huge: true };

export interface MtaStsServer {
  port: number;
  /** Sets what `https://mta-sts.<domain>/.well-known/mta-sts.txt` answers. */
  serve(domain: string, answer: PolicyAnswer): void;
  /** Presents this certificate for the domain's policy host instead of the CA's good one. */
  certificate(domain: string, cert: { key: string; cert: string }): void;
  /** Requests per domain so far. */
  fetches(domain: string): number;
  close(): Promise<void>;
}

export const policy = (mode: 'enforce' | 'testing' | 'none', mx: string[], maxAge = 86400): string =>
  ['version: STSv1', `mode: ${mode}`, ...mx.map((m) => `mx: ${m}`), `max_age: ${maxAge}`, ''].join('\r\n');

export async function startMtaStsServer(t: { teardown(fn: () => unknown): void }, ca: TestCa): Promise<MtaStsServer> {
  const answers = new Map<string, PolicyAnswer>();
  const certs = new Map<string, { key: string; cert: string }>();
  const counts = new Map<string, number>();
  const fallback = ca.issue(['mta-sts.invalid']);
  const server: Server = createServer(
    {
      ...fallback,
      SNICallback: (servername, cb) => {
        const domain = servername.replace(/^mta-sts\./, '');
        const pair = certs.get(domain) ?? ca.issue([servername]);
        certs.set(domain, pair);
        cb(null, createSecureContext(pair));
      },
    },
    (req, res) => {
      const domain = String(req.headers.host ?? '')
        .replace(/:\d+$/, '')
        .replace(/^mta-sts\./, '');
      counts.set(domain, (counts.get(domain) ?? 0) + 1);
      const answer = answers.get(domain);
      if (!answer || req.url !== '/.well-known/mta-sts.txt') return res.writeHead(404).end();
      if ('huge' in answer) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write(policy('enforce', ['mx.example']));
        res.end('#'.repeat(200 * 1024));
        return;
      }
      if ('status' in answer) return res.writeHead(answer.status, answer.location ? { location: answer.location } : {}).end();
      res.writeHead(200, { 'content-type': answer.contentType ?? 'text/plain; charset=utf-8' }).end(answer.policy);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  t.teardown(close);
  return {
    port: (server.address() as AddressInfo).port,
    serve: (domain, answer) => void answers.set(domain, answer),
    certificate: (domain, cert) => void certs.set(domain, cert),
    fetches: (domain) => counts.get(domain) ?? 0,
    close,
  };
}
