// The Express app: public routes (health, tracking, callbacks) first, then /v1 behind one chain of
// authenticate → rate limit → JSON body → resource routers → 404, with one error mapper at the end.
import express, { type Router } from 'express';
import type { Config } from '../config.js';
import type { Clock } from '../lib/clock.js';
import { AppError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { KeyStore } from '../workspaces/keys.js';
import { authenticate, type OtherAuth } from './auth.js';
import { errorHandler } from './errors.js';
import { rateLimit } from './rate-limit.js';

export interface HttpDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  keys: KeyStore;
  /** Routers mounted under /v1, after authentication. */
  v1: Router[];
  /** Routers mounted at the root without API-key authentication (each checks its own tokens). */
  open: Router[];
  /** The dashboard (its pages and /dashboard/api), mounted at the root. */
  dashboard?: Router;
  /** Authenticates a /v1 request that has no Authorization header (the dashboard's session). */
  sessionAuth?: OtherAuth;
}

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

/** Every route the app serves (method and path pattern): the inventory the edge tests walk. */
export function listRoutes(app: express.Express): RouteEntry[] {
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
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return out;
}

export function createHttpApp(deps: HttpDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'extended');
  app.set('trust proxy', deps.config.http.trustProxy);

  // Access lines (method, path, status, time: never headers or bodies) at debug level only.
  if (deps.log.isLevelEnabled('debug')) {
    app.use((req, res, next) => {
      const started = process.hrtime.bigint();
      res.on('finish', () => {
        deps.log.debug(
          { method: req.method, path: req.path, status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 },
          'http',
        );
      });
      next();
    });
  }

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  for (const r of deps.open) app.use(r);
  if (deps.dashboard) app.use(deps.dashboard);

  const v1 = express.Router();
  v1.use(authenticate(deps.keys, deps.sessionAuth));
  v1.use(rateLimit(deps.config.rateLimit, deps.clock));
  v1.use(express.json({ limit: deps.config.http.bodyLimit }));
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
