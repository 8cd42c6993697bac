// A dashboard client over plain HTTP: logs an operator in through /dashboard/api/login, keeps the
// session cookie, and sends the CSRF token on state-changing requests, as the page does.
import type { TestDaemon } from './daemon.js';

export interface DashboardClient {
  cookie: string;
  csrf: string;
  me: any;
  request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; body: T; text: string }>;
  /** Chooses the workspace and environment the session acts on (throws if refused). */
  select(workspaceId: string, env: 'live' | 'test'): Promise<void>;
}

export const OWNER = { email: 'owner@postern.test', password: 'correct horse battery staple' };

/** Logs `who` in (creating it as an owner first unless `create` is false). */
export async function dashboardLogin(
  daemon: TestDaemon,
  who: { email: string; password: string } = OWNER,
  create = true,
): Promise<DashboardClient> {
  if (create && !(await daemon.app.operators.list()).some((o) => o.email === who.email)) {
    await daemon.app.operators.create({ ...who, role: 'owner' });
  }
  const res = await fetch(`${daemon.url}/dashboard/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(who),
  });
  const me: any = await res.json();
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(me)}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0];
  const client: DashboardClient = {
    cookie,
    csrf: me.csrfToken,
    me,
    async request(method, path, body, headers = {}) {
      const h: Record<string, string> = { cookie: client.cookie, ...headers };
      if (method !== 'GET' && method !== 'HEAD' && !('x-csrf-token' in headers)) h['x-csrf-token'] = client.csrf;
      if (body !== undefined) h['content-type'] = 'application/json';
      const r = await fetch(daemon.url + path, {
        method,
        headers: h,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
      });
      const text = await r.text();
      let parsed: any = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON
      }
      return { status: r.status, headers: r.headers, body: parsed, text };
    },
    async select(workspaceId, env) {
      const r = await client.request('PUT', '/dashboard/api/selection', { workspaceId, env });
      if (r.status !== 200) throw new Error(`selection failed: ${r.status} ${r.text}`);
    },
  };
  return client;
}
