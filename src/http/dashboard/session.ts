// The dashboard's session on the wire: the HttpOnly cookie, the CSRF checks every state-changing
// request passes, the client's address, and the principal a session acts as on /v1 (the
// workspace and environment chosen in the dashboard, with every scope).
import type { Request, Response } from 'express';
import { AppError } from '../../lib/errors.js';
import type { AuditLog, Client, Principal, Session, SessionStore, WorkspaceStore } from '../../workspaces/index.js';

const COOKIE = 'postern_session';
const CSRF_HEADER = 'x-csrf-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isSafe(req: Request): boolean {
  return SAFE_METHODS.has(req.method);
}

export function cookieToken(req: Request): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === COOKIE) return part.slice(eq + 1).trim();
  }
  return null;
}

export function setSessionCookie(res: Response, token: string, opts: { secure: boolean; maxAgeMs: number }): void {
  const attrs = [`${COOKIE}=${token}`, 'Path=/', 'HttpOnly', 'SameSite=Strict', `Max-Age=${Math.floor(opts.maxAgeMs / 1000)}`];
  if (opts.secure) attrs.push('Secure');
  res.append('Set-Cookie', attrs.join('; '));
}

export function clearSessionCookie(res: Response, opts: { secure: boolean }): void {
  res.append('Set-Cookie', `${COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${opts.secure ? '; Secure' : ''}`);
}

export function clientOf(req: Request): Client {
  return { ip: req.ip ?? req.socket.remoteAddress ?? '', userAgent: String(req.headers['user-agent'] ?? '') };
}

/**
 * Refuses a request another site made the browser send. A page elsewhere can make the browser
 * post a form here, but it cannot read the CSRF token to put in the header, and the browser names
 * it in Origin and Sec-Fetch-Site. Login and setup (before there is a session) rely on the last two.
 */
export function checkSameOrigin(req: Request): void {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw new AppError('forbidden', 'cross-site request refused');
  }
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `${req.protocol}://${req.get('host')}`) {
    throw new AppError('forbidden', 'cross-site request refused (Origin does not match)');
  }
}

export function checkCsrf(req: Request, session: Session): void {
  if (isSafe(req)) return;
  checkSameOrigin(req);
  if (req.headers[CSRF_HEADER] !== session.csrfToken) {
    throw new AppError('forbidden', `CSRF token missing or wrong: send the ${CSRF_HEADER} header the dashboard was given`);
  }
}

/** What a session may do while the box's rule leaves it only setting up its second factor. */
const SETTING_UP = /^\/(me|logout|account\/(second-factor|passkeys)(\/.*)?)$/;

/**
 * Refuses a request of a session that must set up a second factor first, unless it is one of the
 * routes that set it up (`path` relative to /dashboard/api; null for /v1 and the views).
 */
export function checkSecondFactorRule(session: Session, path: string | null): void {
  if (!session.mustSetUpSecondFactor || (path !== null && SETTING_UP.test(path))) return;
  throw new AppError('forbidden', 'every operator of this box signs in with a second factor: set up an authenticator app first', {
    secondFactor: 'set-up',
  });
}

export interface SessionAuthDeps {
  sessions: SessionStore;
  workspaces: WorkspaceStore;
  audit: AuditLog;
}

/** Records a state-changing request of a session in the audit log when its response is sent. */
export function auditOnFinish(
  audit: AuditLog,
  req: Request,
  res: Response,
  session: Session,
  action?: () => { action: string; target: string },
): void {
  if (isSafe(req)) return;
  res.on('finish', () => {
    const what = action?.() ?? {
      action: `${req.method} ${req.baseUrl}${(req.route as { path?: string } | undefined)?.path ?? ''}`,
      target: req.originalUrl.split('?')[0],
    };
    const code = res.locals.errorCode as string | undefined;
    void audit
      .record({
        operator: { id: session.operator.id, email: session.operator.email },
        ...what,
        workspaceId: session.workspaceId,
        env: session.env,
        ip: clientOf(req).ip,
        outcome: res.statusCode < 400 ? 'ok' : (code ?? `http ${res.statusCode}`),
      })
      .catch(() => undefined);
  });
}

/**
 * The principal of a /v1 request carrying the dashboard's cookie instead of an API key, or null
 * when it carries none. The session acts on the workspace and environment chosen in the dashboard,
 * unscoped; every state-changing call must bring the CSRF token and is audited.
 */
export function sessionPrincipal(deps: SessionAuthDeps) {
  return async (req: Request, res: Response): Promise<Principal | null> => {
    const token = cookieToken(req);
    if (!token) return null;
    const session = await deps.sessions.resolve(token);
    if (!session) throw new AppError('unauthorized', 'the dashboard session has ended; log in again');
    checkCsrf(req, session);
    checkSecondFactorRule(session, null);
    if (!session.workspaceId) throw new AppError('forbidden', 'choose a workspace in the dashboard first');
    const ws = await deps.workspaces.byId(session.workspaceId);
    res.locals.session = session;
    auditOnFinish(deps.audit, req, res, session);
    return {
      keyId: `session:${session.id.slice(0, 16)}`,
      workspace: { id: ws.id, slug: ws.slug, name: ws.name, plan: ws.plan },
      env: session.env,
      livemode: session.env === 'live',
      scopes: null,
    };
  };
}
