// The session's rules one by one, without a daemon (http/dashboard/session.ts): which methods are
// safe, how the cookie is found among others, the cookie that ends a session, the client's address,
// the same-origin and CSRF checks with their messages, what a state-changing call writes to the
// audit log, and the principal a session acts as on /v1. The daemon tests
// (test/http/dashboard/session.test.ts) hold the same rules end to end; these hold each edge.
import { EventEmitter } from 'node:events';
import type { Request, Response } from 'express';
import t from 'tap';
import {
  auditOnFinish,
  checkCsrf,
  checkSameOrigin,
  checkSecondFactorRule,
  clearSessionCookie,
  clientOf,
  cookieToken,
  isSafe,
  sessionPrincipal,
  type SessionAuthDeps,
} from '../../../src/http/dashboard/session.js';
import { AppError } from '../../../src/lib/errors.js';
import type { AuditLog } from '../../../src/workspaces/audit.js';
import type { Session } from '../../../src/workspaces/sessions.js';

interface FakeRequest {
  method?: string;
  headers?: Record<string, string | undefined>;
  protocol?: string;
  host?: string;
  ip?: string;
  remoteAddress?: string;
  baseUrl?: string;
  route?: { path?: string };
  originalUrl?: string;
}

function request(r: FakeRequest = {}): Request {
  const headers = r.headers ?? {};
  return {
    method: r.method ?? 'GET',
    headers,
    protocol: r.protocol ?? 'http',
    get: (name: string) => (name.toLowerCase() === 'host' ? (r.host ?? 'box.example:8025') : headers[name.toLowerCase()]),
    ip: r.ip,
    socket: { remoteAddress: r.remoteAddress },
    baseUrl: r.baseUrl ?? '',
    route: r.route,
    originalUrl: r.originalUrl ?? '/',
  } as unknown as Request;
}

function response(): Response & { appended: [string, string][]; finish(status: number, code?: string): void } {
  const locals: { errorCode?: string } = {};
  const res = Object.assign(new EventEmitter(), {
    appended: [] as [string, string][],
    statusCode: 200,
    locals,
    append(name: string, value: string) {
      res.appended.push([name, value]);
      return res;
    },
    finish(status: number, code?: string) {
      res.statusCode = status;
      if (code) locals.errorCode = code;
      res.emit('finish');
    },
  });
  return res as unknown as Response & { appended: [string, string][]; finish(status: number, code?: string): void };
}

const SESSION: Session = {
  id: 'a'.repeat(64),
  operator: { id: 'op_1', email: 'owner@postern.test' } as Session['operator'],
  csrfToken: 'the-csrf-token',
  workspaceId: 'ws_1',
  env: 'live',
  createdAt: '2026-11-28T00:00:00.000Z',
  expiresAt: '2026-11-29T00:00:00.000Z',
  method: 'password',
  mustSetUpSecondFactor: false,
};

/** What an AppError thrown by `fn` says, or null when nothing is thrown. */
function refusal(fn: () => unknown): { code: string; message: string } | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { code: err.code, message: err.message };
  }
}

t.test('GET, HEAD and OPTIONS are safe; every other method changes state', async (t) => {
  for (const method of ['GET', 'HEAD', 'OPTIONS']) t.ok(isSafe(request({ method })), method);
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', '']) t.notOk(isSafe(request({ method })), method || 'no method');
});

t.test('the session cookie is found by its exact name among the others, trimmed', async (t) => {
  const token = (cookie?: string) => cookieToken(request({ headers: { cookie } }));
  t.equal(token(undefined), null, 'no Cookie header');
  t.equal(token(''), null, 'an empty one');
  t.equal(token('postern_session=abc'), 'abc', 'alone');
  t.equal(token('theme=dark; postern_session=abc'), 'abc', 'after another cookie');
  t.equal(token('postern_session=abc ; theme=dark'), 'abc', 'the value is trimmed');
  t.equal(token('  postern_session  =abc'), 'abc', 'so is the name');
  t.equal(token('xpostern_session=abc; postern_sessions=def'), null, 'a name that only contains it is another cookie');
  t.equal(token('theme; =abc'), null, 'a part without a name or without =');
  t.equal(token('postern_sessionX'), null, 'a part without = is no cookie, although all but its last character is the name');
  t.equal(token('postern_session=a=b'), 'a=b', 'the value runs to the end of its part');
});

t.test('logout clears the cookie with the attributes it was set with', async (t) => {
  for (const secure of [false, true]) {
    const res = response();
    clearSessionCookie(res, { secure });
    t.same(res.appended, [['Set-Cookie', `postern_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`]]);
  }
});

t.test("the client is the request's address (proxies resolved by Express), else the socket's, and its user agent", async (t) => {
  t.same(clientOf(request({ ip: '203.0.113.7', remoteAddress: '127.0.0.1', headers: { 'user-agent': 'Firefox' } })), {
    ip: '203.0.113.7',
    userAgent: 'Firefox',
  });
  t.same(clientOf(request({ remoteAddress: '127.0.0.1' })), { ip: '127.0.0.1', userAgent: '' }, 'no resolved address, no agent');
  t.same(clientOf(request()), { ip: '', userAgent: '' }, 'neither: empty, never undefined');
});

t.test('another site is refused by Sec-Fetch-Site or by Origin', async (t) => {
  const check = (headers: Record<string, string>, protocol = 'http') =>
    refusal(() => checkSameOrigin(request({ method: 'POST', headers, protocol })));
  t.equal(check({}), null, 'no header: a client that is not a browser');
  t.equal(check({ 'sec-fetch-site': 'same-origin' }), null, 'same-origin');
  t.equal(check({ 'sec-fetch-site': 'none' }), null, 'none: typed in the address bar');
  for (const site of ['same-site', 'cross-site', '']) {
    t.same(check({ 'sec-fetch-site': site }), { code: 'forbidden', message: 'cross-site request refused' }, `Sec-Fetch-Site ${site}`);
  }
  t.equal(check({ origin: 'http://box.example:8025' }), null, 'the own origin');
  const foreign = { code: 'forbidden', message: 'cross-site request refused (Origin does not match)' };
  t.same(check({ origin: 'http://evil.example' }), foreign, 'another origin');
  t.same(check({ origin: 'http://box.example:8025' }, 'https'), foreign, 'the same host over another scheme');
  t.same(check({ origin: 'null' }), foreign, 'an opaque origin');
});

t.test('CSRF: a state-changing call brings the session token; a safe one is not checked', async (t) => {
  const check = (method: string, headers: Record<string, string>) => refusal(() => checkCsrf(request({ method, headers }), SESSION));
  t.equal(check('GET', { origin: 'http://evil.example' }), null, 'a safe method passes whatever it carries');
  t.equal(check('POST', { 'x-csrf-token': 'the-csrf-token' }), null, 'the right token');
  const wrong = {
    code: 'forbidden',
    message: 'CSRF token missing or wrong: send the x-csrf-token header the dashboard was given',
  };
  t.same(check('POST', {}), wrong, 'no token');
  t.same(check('DELETE', { 'x-csrf-token': 'another' }), wrong, 'a wrong token');
  t.match(check('POST', { 'x-csrf-token': 'the-csrf-token', 'sec-fetch-site': 'cross-site' }), { message: 'cross-site request refused' });
});

t.test('a session the box requires a second factor of reaches only the routes that set one up', async (t) => {
  const free = { ...SESSION, mustSetUpSecondFactor: false };
  const bound = { ...SESSION, mustSetUpSecondFactor: true };
  for (const path of ['/overview', '/keys', '/account/second-factor', null])
    t.equal(
      refusal(() => checkSecondFactorRule(free, path)),
      null,
      `free: ${path}`,
    );
  for (const path of ['/me', '/logout', '/account/second-factor', '/account/second-factor/totp', '/account/second-factor/totp/confirm']) {
    t.equal(
      refusal(() => checkSecondFactorRule(bound, path)),
      null,
      `setting up: ${path}`,
    );
  }
  for (const path of [
    '/overview',
    '/keys',
    '/selection',
    '/account',
    '/me/x',
    '/account/second-factorx',
    '/operators/x/second-factor/reset',
    '',
    null,
  ]) {
    t.match(
      refusal(() => checkSecondFactorRule(bound, path)),
      { code: 'forbidden', message: /set up an authenticator app first/ },
      `refused: ${path}`,
    );
  }
});

t.test('a state-changing call of a session is audited when its response is sent; a safe one is not', async (t) => {
  const recorded: Parameters<AuditLog['record']>[0][] = [];
  const audit = { record: async (e: Parameters<AuditLog['record']>[0]) => void recorded.push(e) } as AuditLog;
  const call = (r: FakeRequest, status: number, code?: string, action?: () => { action: string; target: string }) => {
    const res = response();
    auditOnFinish(audit, request(r), res, SESSION, action);
    res.finish(status, code);
  };

  call({ method: 'GET' }, 200);
  t.same(recorded, [], 'a read is not audited');

  call({ method: 'POST', baseUrl: '/v1', route: { path: '/send' }, originalUrl: '/v1/send?x=1', ip: '198.51.100.4' }, 202);
  call({ method: 'DELETE', baseUrl: '/v1', originalUrl: '/v1/templates/x' }, 400);
  call({ method: 'PUT', baseUrl: '/v1', route: {}, originalUrl: '/v1/templates/x/draft' }, 400, 'invalid_body');
  call({ method: 'POST', baseUrl: '/v1', route: { path: '/send' }, originalUrl: '/v1/send' }, 399);
  call({ method: 'POST', originalUrl: '/dashboard/api/keys' }, 201, undefined, () => ({ action: 'key.create', target: 'key_1' }));
  t.same(
    recorded.map((e) => [e.action, e.target, e.outcome]),
    [
      ['POST /v1/send', '/v1/send', 'ok'],
      ['DELETE /v1', '/v1/templates/x', 'http 400'],
      ['PUT /v1', '/v1/templates/x/draft', 'invalid_body'],
      ['POST /v1/send', '/v1/send', 'ok'],
      ['key.create', 'key_1', 'ok'],
    ],
    'the route (or the named action), the path without its query, and the outcome',
  );
  t.match(recorded[0], {
    operator: { id: 'op_1', email: 'owner@postern.test' },
    workspaceId: 'ws_1',
    env: 'live',
    ip: '198.51.100.4',
  });
});

t.test('the principal of a session on /v1', async (t) => {
  const sessions: Record<string, Session> = {
    'live-token': SESSION,
    'test-token': { ...SESSION, env: 'test' },
    'no-workspace': { ...SESSION, workspaceId: null },
  };
  const deps = {
    sessions: { resolve: async (token: string) => sessions[token] ?? null },
    workspaces: { byId: async (id: string) => ({ id, slug: 'acme', name: 'Acme', plan: 'pro' }) },
    audit: { record: async () => undefined },
  } as unknown as SessionAuthDeps;
  const principal = sessionPrincipal(deps);
  const as = async (cookie?: string) => {
    try {
      return { principal: await principal(request({ headers: { cookie } }), response()) };
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      return { code: err.code, message: err.message };
    }
  };

  t.same(await as(), { principal: null }, 'no cookie: not a session request (the Authorization header decides)');
  t.same(await as('theme=dark'), { principal: null }, 'another cookie only');
  t.same(await as('postern_session=ended'), { code: 'unauthorized', message: 'the dashboard session has ended; log in again' });
  t.same(await as('postern_session=no-workspace'), { code: 'forbidden', message: 'choose a workspace in the dashboard first' });
  t.same(await as('postern_session=live-token'), {
    principal: {
      keyId: `session:${'a'.repeat(16)}`,
      workspace: { id: 'ws_1', slug: 'acme', name: 'Acme', plan: 'pro' },
      env: 'live',
      livemode: true,
      scopes: null,
    },
  });
  t.match(await as('postern_session=test-token'), { principal: { env: 'test', livemode: false } });
});
