// The operator's own routes: the first-run setup link, login (throttled, with the second factor when
// the operator has one, or with a passkey alone), logout, who am I, the operator's own second factor
// and passkeys, and the choice of workspace and environment every page acts on.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { parseBody } from '../../lib/validation.js';
import { AppError } from '../../lib/errors.js';
import { answer, auditAs, isSecure, sessionOf, siteOf, type DashboardDeps } from './context.js';
import { checkSameOrigin, clearSessionCookie, clientOf, setSessionCookie } from './session.js';
import type { Session } from '../../workspaces/index.js';

const credentials = z.object({ email: z.string().max(254), password: z.string().max(1024) });
const setup = credentials.extend({ token: z.string().max(100) });
/** A code of the authenticator app, or one of the recovery codes. */
const proof = z.object({ code: z.string().max(20).optional(), recoveryCode: z.string().max(40).optional() });
const login = credentials.extend(proof.shape);
const confirmation = z.object({ code: z.string().max(20) });
/** A browser's answer to a WebAuthn ceremony, checked by the passkeys module. */
const ceremony = z.object({ response: z.record(z.string(), z.unknown()) });
const newPasskey = ceremony.extend({ name: z.string().max(100) });
const selection = z.object({ workspaceId: z.string().max(64), env: z.enum(['live', 'test']) });

/**
 * Checks the operator's own factor before a change to it. A wrong code here is a refusal (403), not
 * an ended session (401, which sends the page back to the login form).
 */
async function prove(deps: DashboardDeps, operatorId: string, body: unknown): Promise<void> {
  try {
    await deps.factors.check(operatorId, parseBody(proof, body));
  } catch (err) {
    if (err instanceof AppError && err.code === 'unauthorized') throw new AppError('forbidden', err.message, err.extra);
    throw err;
  }
}

/** What the page needs to know of its session: who, what it may act on, and the CSRF token. */
async function me(deps: DashboardDeps, session: Session) {
  const all = await deps.workspaces.list();
  const workspaces = all.filter((w) => deps.operators.mayActOn(session.operator, w.id));
  return {
    operator: { id: session.operator.id, email: session.operator.email, role: session.operator.role },
    csrfToken: session.csrfToken,
    workspaces: workspaces.map((w) => ({ id: w.id, slug: w.slug, name: w.name, plan: w.plan })),
    selection: session.workspaceId ? { workspaceId: session.workspaceId, env: session.env } : null,
    expiresAt: session.expiresAt,
    signedInWith: session.method,
    mustSetUpSecondFactor: session.mustSetUpSecondFactor,
  };
}

/** Opens a session on a login, choosing the operator's first workspace so pages work at once. */
async function startSession(deps: DashboardDeps, session: Session): Promise<Session> {
  const first = (await deps.workspaces.list()).find((w) => deps.operators.mayActOn(session.operator, w.id));
  return first ? deps.sessions.select(session, first.id, 'live') : session;
}

/** Routes that work without a session (setup, login, state); the rest come after requireSession. */
export function publicAccountRoutes(deps: DashboardDeps): Router {
  const r = Router();
  const cookieOpts = (req: Parameters<typeof isSecure>[1]) => ({
    secure: isSecure(deps, req),
    maxAgeMs: deps.config.dashboard.sessionMaxAge,
  });

  /** A sign-in in the audit log: who (unknown when it failed before naming one), how, from where, how it ended. */
  const recordSignIn = (
    who: { id: string | null; email: string },
    method: string,
    req: Request,
    outcome: string,
    action = 'session.login',
  ) => deps.audit.record({ operator: who, action, target: method, workspaceId: null, env: null, ip: clientOf(req).ip, outcome });
  /** A session opened: its first workspace chosen, the sign-in audited, the cookie set. */
  async function signedIn(req: Request, res: Response, opened: { token: string; session: Session }, action?: string): Promise<Session> {
    const session = await startSession(deps, opened.session);
    const { id, email } = session.operator;
    await recordSignIn({ id, email }, action ? email : session.method, req, 'ok', action);
    setSessionCookie(res, opened.token, cookieOpts(req));
    return session;
  }

  r.get('/state', async (_req, res) => {
    answer(res, 'GET /dashboard/api/state', { needsSetup: (await deps.operators.count()) === 0, sso: deps.sso.name() });
  });

  // Single sign-on: browser navigations, so failures come back to the login page to be shown there.
  const callback = () => `${deps.publicUrl()}/dashboard/api/sso/callback`;
  const backToLogin = (res: Response, err: unknown) => {
    if (!(err instanceof AppError)) throw err;
    res.redirect(302, `/dashboard/?${new URLSearchParams({ sso_error: err.message }).toString()}`);
  };
  r.get('/sso/start', async (_req, res) => {
    try {
      res.redirect(302, await deps.sso.start(callback()));
    } catch (err) {
      backToLogin(res, err);
    }
  });
  r.get('/sso/callback', async (req, res) => {
    const client = clientOf(req);
    let operator;
    try {
      operator = await deps.sso.finish(`${deps.publicUrl()}${req.originalUrl}`, callback());
    } catch (err) {
      if (err instanceof AppError) await recordSignIn({ id: null, email: '' }, 'sso', req, err.code);
      return backToLogin(res, err);
    }
    await signedIn(req, res, await deps.sessions.open(operator, client, 'sso'));
    res.redirect(302, '/dashboard/');
  });

  r.post('/setup', async (req, res) => {
    checkSameOrigin(req);
    const body = parseBody(setup, req.body);
    const operator = await deps.operators.completeSetup(body.token, body);
    const session = await signedIn(req, res, await deps.sessions.open(operator, clientOf(req)), 'operator.setup');
    answer(res, 'POST /dashboard/api/setup', await me(deps, session), 201);
  });

  r.post('/login', async (req, res) => {
    checkSameOrigin(req);
    const body = parseBody(login, req.body);
    const client = clientOf(req);
    try {
      const opened = await deps.sessions.login(body.email, body.password, client, { code: body.code, recoveryCode: body.recoveryCode });
      const session = await signedIn(req, res, opened);
      answer(res, 'POST /dashboard/api/login', await me(deps, session));
    } catch (err) {
      // A login told to bring its second factor has not failed yet: the page asks for the code.
      if (err instanceof AppError && !(err.extra.secondFactor && !body.code && !body.recoveryCode)) {
        await recordSignIn({ id: null, email: body.email.trim().toLowerCase().slice(0, 254) }, '', req, err.code);
      }
      throw err;
    }
  });

  // Signing in with a passkey: options with a challenge, then the authenticator's signed answer.
  r.post('/login/passkey/options', async (req, res) => {
    checkSameOrigin(req);
    res.json(await deps.passkeys.signInOptions(siteOf(deps, req)));
  });
  r.post('/login/passkey', async (req, res) => {
    checkSameOrigin(req);
    const body = parseBody(ceremony, req.body);
    const client = clientOf(req);
    let operatorId: string;
    try {
      operatorId = await deps.passkeys.signIn(body.response, siteOf(deps, req));
    } catch (err) {
      if (err instanceof AppError) await recordSignIn({ id: null, email: '' }, 'passkey', req, err.code);
      throw err;
    }
    const session = await signedIn(req, res, await deps.sessions.open(await deps.operators.byId(operatorId), client, 'passkey'));
    answer(res, 'POST /dashboard/api/login/passkey', await me(deps, session));
  });
  return r;
}

export function accountRoutes(deps: DashboardDeps): Router {
  const r = Router();
  r.get('/me', async (_req, res) => {
    answer(res, 'GET /dashboard/api/me', await me(deps, sessionOf(res)));
  });

  r.post('/logout', async (req, res) => {
    auditAs(res, 'session.logout');
    const session = sessionOf(res);
    await deps.sessions.end(session);
    clearSessionCookie(res, { secure: isSecure(deps, req) });
    // Signed in at the provider: the page goes on to the provider's logout, which comes back here.
    const redirect = session.method === 'sso' ? await deps.sso.logoutUrl(`${deps.publicUrl()}/dashboard/`).catch(() => null) : null;
    answer(res, 'POST /dashboard/api/logout', { loggedOut: true, redirect });
  });

  r.get('/account/second-factor', async (_req, res) => {
    answer(res, 'GET /dashboard/api/account/second-factor', await deps.factors.status(sessionOf(res).operator.id));
  });
  // Setting up an app: a new secret (with its QR code), asked at login once a code confirms it.
  r.post('/account/second-factor/totp', async (_req, res) => {
    auditAs(res, 'second-factor.begin');
    answer(res, 'POST /dashboard/api/account/second-factor/totp', await deps.factors.begin(sessionOf(res).operator), 201);
  });
  r.post('/account/second-factor/totp/confirm', async (req, res) => {
    const { code } = parseBody(confirmation, req.body);
    auditAs(res, 'second-factor.set-up', 'totp');
    answer(res, 'POST /dashboard/api/account/second-factor/totp/confirm', await deps.factors.confirm(sessionOf(res).operator.id, code));
  });
  // Changing the factor needs the factor: a session left open on a shared machine cannot.
  r.post('/account/second-factor/recovery-codes', async (req, res) => {
    const operatorId = sessionOf(res).operator.id;
    auditAs(res, 'second-factor.recovery-codes');
    await prove(deps, operatorId, req.body);
    answer(res, 'POST /dashboard/api/account/second-factor/recovery-codes', {
      recoveryCodes: await deps.factors.renewRecoveryCodes(operatorId),
    });
  });
  r.post('/account/second-factor/remove', async (req, res) => {
    const operatorId = sessionOf(res).operator.id;
    auditAs(res, 'second-factor.remove', 'totp');
    await prove(deps, operatorId, req.body);
    await deps.factors.remove(operatorId);
    res.json(await deps.factors.status(operatorId));
  });

  r.get('/account/passkeys', async (_req, res) => {
    answer(res, 'GET /dashboard/api/account/passkeys', { data: await deps.passkeys.list(sessionOf(res).operator.id) });
  });
  r.post('/account/passkeys/options', async (req, res) => {
    res.json(await deps.passkeys.registrationOptions(sessionOf(res).operator, siteOf(deps, req)));
  });
  r.post('/account/passkeys', async (req, res) => {
    const body = parseBody(newPasskey, req.body);
    const passkey = await deps.passkeys.register(sessionOf(res).operator, body.response, body.name, siteOf(deps, req));
    auditAs(res, 'passkey.add', passkey.name);
    res.status(201).json(passkey);
  });
  r.delete('/account/passkeys/:id', async (req, res) => {
    auditAs(res, 'passkey.remove', req.params.id);
    await deps.passkeys.remove(sessionOf(res).operator.id, req.params.id);
    res.json({ removed: true });
  });

  r.put('/selection', async (req, res) => {
    const body = parseBody(selection, req.body);
    auditAs(res, 'session.select', `${body.workspaceId} ${body.env}`);
    await deps.workspaces.byId(body.workspaceId);
    const session = await deps.sessions.select(sessionOf(res), body.workspaceId, body.env);
    answer(res, 'PUT /dashboard/api/selection', await me(deps, session));
  });
  return r;
}
