// The Express app: public routes (health, tracking, callbacks) first, then /v1 behind one chain of
// authenticate → rate limit → JSON body → resource routers → 404, with one error mapper at the end.
import { randomUUID } from 'node:crypto';
import express, { type Router } from 'express';
import type { Config } from '../config.js';
import type { Clock } from '../lib/clock.js';
import { AppError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { KeyStore } from '../workspaces/index.js';
import { authenticate, type OtherAuth } from './auth.js';
import { errorHandler } from './errors.js';
import { jsonBody } from './json-body.js';
import { rateLimit } from './rate-limit.js';
import type { Budgets } from '../cluster/index.js';
import { vendorApis, type VendorApi } from './compat/compat.js';

export interface HttpDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  keys: KeyStore;
  /** Where the per-key request budgets are kept (cluster/budgets.ts). */
  budgets: Budgets;
  /** Routers mounted under /v1, after authentication. */
  v1: Router[];
  /** Routers mounted under /v1 after authentication and before the JSON parser: they read their bodies as streams. */
  v1Streams?: Router[];
  /** Routers mounted at the root without API-key authentication (each checks its own tokens). */
  open: Router[];
  /** The hosted vendors' APIs, each under /compat/<vendor> (http/compat/). */
  vendors?: VendorApi[];
  /** The dashboard (its pages and /dashboard/api), mounted at the root. */
  dashboard?: Router;
  /** Authenticates a /v1 request that has no Authorization header (the dashboard's session). */
  sessionAuth?: OtherAuth;
  /** What GET /readyz reports: whether this node can serve (database, listeners, migrations). */
  readiness?: () => Promise<Readiness>;
  /**
   * While HTTPS is on (and `https.redirectHttp`): the port plain-HTTP requests are redirected to
   * (null until it listens), and the paths answered over HTTP all the same (ACME HTTP-01, the
   * MTA-STS policy: prefixes). Health probes are always answered.
   */
  httpsRedirect?: { port: () => number | null; except: string[] };
  /** Told of every response: the route pattern that answered (`unmatched` when none did), never the raw path. */
  observe?: (method: string, route: string, status: number, seconds: number) => void;
}

export interface Readiness {
  ready: boolean;
  /** Why not, one line each (empty when ready). */
  reasons: string[];
  checks: Record<string, unknown>;
}

// A request id a client or proxy sends is kept when it is a plain token; anything else is replaced.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface RouteEntry {
  method: string;
  /** The path pattern as mounted, e.g. `/v1/messages/:id`. */
  path: string;
}

interface Layer {
  rawPath?: string;
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** Every route an app or a router serves (method and path pattern): the inventory the edge tests walk. */
export function listRoutes(app: express.Express | Router): RouteEntry[] {
  const out: RouteEntry[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods)) out.push({ method: method.toUpperCase(), path: prefix + layer.route.path });
      } else if (layer.handle?.stack) {
        walk(layer.handle.stack, prefix + (layer.rawPath && layer.rawPath !== '/' ? layer.rawPath : ''));
      }
    }
  };
  const root = app as unknown as { router?: { stack: Layer[] }; stack?: Layer[] };
  walk(root.router?.stack ?? root.stack ?? [], '');
  return out;
}

export function createHttpApp(deps: HttpDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'extended');
  app.set('trust proxy', deps.config.http.trustProxy);

  // Every response names its request (X-Request-Id), and so do the log lines about it.
  app.use((req, res, next) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    res.locals.requestId = id;
    res.setHeader('X-Request-Id', id);
    next();
  });

  if (deps.observe) {
    const observe = deps.observe;
    app.use((req, res, next) => {
      const started = process.hrtime.bigint();
      res.on('finish', () => {
        // req.route is the route that answered; its mount point is req.baseUrl (`/v1`, ``).
        const route = req.route ? `${req.baseUrl}${String((req.route as { path: unknown }).path)}` : 'unmatched';
        observe(req.method, route, res.statusCode, Number(process.hrtime.bigint() - started) / 1e9);
      });
      next();
    });
  }

  // Access lines (method, path, status, time: never headers or bodies) at debug level only.
  if (deps.log.isLevelEnabled('debug')) {
    app.use((req, res, next) => {
      const started = process.hrtime.bigint();
      res.on('finish', () => {
        deps.log.debug(
          {
            requestId: res.locals.requestId,
            method: req.method,
            // The whole path: by the time the response ends, routers have cut req.path to their part.
            path: req.originalUrl.split('?')[0],
            status: res.statusCode,
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          },
          'http',
        );
      });
      next();
    });
  }

  // Liveness: the process answers. Readiness: it can serve (load balancers, orchestrators).
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/readyz', async (_req, res) => {
    const r = deps.readiness ? await deps.readiness() : { ready: true, reasons: [], checks: {} };
    res.setHeader('Cache-Control', 'no-store');
    res.status(r.ready ? 200 : 503).json(r);
  });
  if (deps.httpsRedirect) {
    const { port: httpsPort, except } = deps.httpsRedirect;
    app.use((req, res, next) => {
      const port = httpsPort();
      // req.protocol: `https` also behind a trusted proxy that terminated TLS (X-Forwarded-Proto).
      if (port === null || req.protocol === 'https' || except.some((p) => req.path.startsWith(p))) return next();
      const host = (req.hostname || deps.config.hostname).replace(/^\[|\]$/g, '');
      const authority = `${host.includes(':') ? `[${host}]` : host}${port === 443 ? '' : `:${port}`}`;
      // 308 keeps the method and body: a POST that came over HTTP is not silently turned into a GET.
      res.redirect(308, `https://${authority}${req.originalUrl}`);
    });
  }
  for (const r of deps.open) app.use(r);
  if (deps.dashboard) app.use(deps.dashboard);

  const limit = rateLimit(deps.config.rateLimit, deps.budgets);
  const json = jsonBody(deps.config.http.bodyLimit);
  if (deps.vendors?.length)
    app.use(vendorApis(deps.vendors, { keys: deps.keys, log: deps.log, limit, json, bodyLimit: deps.config.http.bodyLimit }));

  const v1 = express.Router();
  v1.use(authenticate(deps.keys, deps.sessionAuth));
  v1.use(limit);
  for (const r of deps.v1Streams ?? []) v1.use(r);
  v1.use(json);
  // A body in another format would otherwise read as empty and fail as a missing field. An empty
  // body (POST …/publish, Content-Length: 0) needs no type.
  v1.use((req, _res, next) => {
    const length = Number(req.headers['content-length'] ?? 0);
    const hasBody = req.headers['transfer-encoding'] !== undefined || length > 0;
    if (hasBody && !req.is('application/json')) {
      throw new AppError('unsupported_media_type', 'send JSON: the request body must be application/json (Content-Type: application/json)');
    }
    next();
  });
  for (const r of deps.v1) v1.use(r);
  app.use('/v1', v1);

  app.use(() => {
    throw new AppError('not_found', 'no such route');
  });
  app.use(errorHandler(deps.log));
  return app;
}
