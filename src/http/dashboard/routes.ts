// The dashboard adapter: served by the daemon under /dashboard (/ redirects there). Its own JSON
// routes live under /dashboard/api (sessions, keys, SMTP credentials and settings, workspaces,
// operators, audit, overview, connections); every other page calls /v1 itself with the session
// cookie, so no rule is written twice. Every response here carries the security headers; every state-changing call needs the
// CSRF token and is recorded in the audit log.
import { Router, type RequestHandler } from 'express';
import { AppError } from '../../lib/errors.js';
import { jsonBody } from '../json-body.js';
import { accountRoutes, publicAccountRoutes } from './account.js';
import { adminRoutes } from './admin.js';
import { dashboardAssets } from './assets.js';
import { connectionRoutes } from './connections.js';
import type { DashboardDeps } from './context.js';
import { inboundViewRoutes } from './inbound-view.js';
import { messageApiRoutes, messageViewRoutes } from './message-view.js';
import { overviewRoutes } from './overview.js';
import { smtpRoutes } from './smtp.js';
import { warmUpRoutes } from './warm-up.js';
import { templateViewRoutes } from './template-view.js';
import { templateApiRoutes } from './templates.js';
import { suppressionExportRoutes } from './suppressions.js';
import { webhookViewRoutes } from './webhooks.js';
import { auditOnFinish, checkCsrf, checkSecondFactorRule, cookieToken } from './session.js';

/** Security headers of every dashboard response: a strict CSP, no framing, no sniffing, no referrer. */
const securityHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader(
    'Content-Security-Policy',
    [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "frame-src 'self'",
      "form-action 'self'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
  );
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  res.setHeader('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()');
  next();
};

/**
 * Resolves the session cookie; 401 without one. State-changing calls must carry the CSRF token. A
 * session the box's rule leaves only setting up a second factor reaches only those routes (the
 * JSON routes of /dashboard/api; `api` says whether this is that mount).
 */
function requireSession(deps: DashboardDeps, api: boolean): RequestHandler {
  return async (req, res, next) => {
    const token = cookieToken(req);
    const session = token ? await deps.sessions.resolve(token) : null;
    if (!session) throw new AppError('unauthorized', 'log in to the dashboard');
    checkCsrf(req, session);
    checkSecondFactorRule(session, api ? req.path : null);
    res.locals.session = session;
    auditOnFinish(deps.audit, req, res, session, () => res.locals.audit as { action: string; target: string });
    next();
  };
}

export function dashboardRoutes(deps: DashboardDeps): Router {
  const r = Router();
  const files = dashboardAssets();

  r.get('/', (_req, res) => {
    res.redirect(302, '/dashboard/');
  });

  const api = Router();
  api.use(securityHeaders, (_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  api.use(jsonBody('1mb'));
  api.use(publicAccountRoutes(deps));
  api.use(requireSession(deps, true));
  api.use(accountRoutes(deps));
  api.use(adminRoutes(deps));
  api.use(overviewRoutes(deps));
  api.use(messageApiRoutes(deps));
  api.use(connectionRoutes(deps));
  api.use(templateApiRoutes(deps));
  api.use(suppressionExportRoutes(deps));
  api.use(webhookViewRoutes(deps));
  api.use(smtpRoutes(deps));
  api.use(warmUpRoutes(deps));
  api.use(() => {
    throw new AppError('not_found', 'no such dashboard route');
  });
  r.use('/dashboard/api', api);

  // One mount: the session is resolved once for every sandboxed view.
  r.use(
    '/dashboard/view',
    securityHeaders,
    requireSession(deps, false),
    inboundViewRoutes(deps),
    templateViewRoutes(deps),
    messageViewRoutes(deps),
  );
  r.get('/dashboard/assets/:name', securityHeaders, files.asset);
  // One route per form, so the route inventory (listRoutes) names each.
  for (const p of ['/dashboard', '/dashboard/', '/dashboard/*path']) r.get(p, securityHeaders, files.page);
  return r;
}
