// The metrics listener: GET /metrics in the Prometheus text format, on its own address
// (`metrics.host`/`metrics.port`, 127.0.0.1:9464 by default) so it is never published with the
// API by accident. With `metrics.token` set, a scrape must send `Authorization: Bearer <token>`.
// A plain node:http server: nothing of the API's stack (sessions, rate limits) applies here.
import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Registry } from 'prom-client';

/** The metrics HTTP server (not listening yet). */
export function createMetricsServer(registry: Registry, opts: { token: string }, onError: (err: Error) => void): http.Server {
  const expected = Buffer.from(`Bearer ${opts.token}`);
  const authorized = (header: string | undefined) => {
    if (!opts.token) return true;
    const given = Buffer.from(header ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  const json = (res: http.ServerResponse, status: number, code: string, message: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...extra });
    res.end(JSON.stringify({ error: { code, message } }));
  };
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return json(res, 404, 'not_found', 'no such route: the metrics listener serves GET /metrics only');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return json(res, 405, 'invalid_request', 'use GET /metrics', { allow: 'GET, HEAD' });
    }
    if (!authorized(req.headers.authorization)) {
      return json(res, 401, 'unauthorized', 'send Authorization: Bearer <metrics.token>', { 'www-authenticate': 'Bearer' });
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: Error) => {
        onError(err);
        json(res, 500, 'internal', 'collecting metrics failed; see the log');
      },
    );
  });
}
