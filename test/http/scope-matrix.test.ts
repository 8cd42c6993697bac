// The scope matrix: a key holding one scope alone, against every /v1 route the daemon serves. The
// routes come from the app's own router stack (app.routes()), so a route added later is part of
// the matrix; the expected scope of each comes from the scope table of the interface and of
// docs/api/README.md ("Scopes"), transcribed below, and every route must match exactly one row of
// it. A key without the route's scope gets 403 insufficient_scope naming the scope; a key with it
// never gets a 403 (it may get 404 or 422 for the made-up ids and empty bodies used here). An
// unscoped key holds every scope but `cluster` (the box's nodes), which a key has only by name.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import type { Scope } from '../../src/contract/vocabulary.js';

const SCOPES: Scope[] = ['read', 'send', 'cancel', 'inbound', 'webhooks', 'cluster'];
// Scopes an unscoped key does not hold (workspaces/scopes.ts BOX_SCOPES).
const NOT_UNSCOPED: Scope[] = ['cluster'];

interface Row {
  scope: Scope;
  method: string | null; // null: every method
  path: string | RegExp; // a route pattern as mounted, or every route under a prefix
}

// The interface's table ("Authentication", item 4) and docs/api/README.md, which adds the routes
// the interface does not show (suppressions, connections, webhooks, forwarding under /v1/inbound).
const TABLE: Row[] = [
  { scope: 'read', method: 'GET', path: '/v1/context' },
  { scope: 'read', method: 'GET', path: '/v1/messages' },
  { scope: 'read', method: 'GET', path: '/v1/messages/:id' },
  { scope: 'read', method: 'GET', path: '/v1/templates' },
  { scope: 'read', method: 'GET', path: '/v1/templates/:slug' },
  { scope: 'read', method: 'POST', path: '/v1/templates/:slug/render' },
  { scope: 'read', method: 'GET', path: '/v1/suppressions' },
  { scope: 'read', method: 'GET', path: '/v1/suppressions/export' },
  { scope: 'read', method: 'GET', path: '/v1/connections' },
  { scope: 'read', method: 'GET', path: '/v1/reports/dmarc' },
  { scope: 'read', method: 'GET', path: '/v1/reports/tls' },
  { scope: 'read', method: 'GET', path: '/v1/destinations' },
  { scope: 'read', method: 'GET', path: '/v1/destinations/:domain' },
  { scope: 'send', method: 'POST', path: '/v1/destinations/:domain/suspend' },
  { scope: 'send', method: 'POST', path: '/v1/destinations/:domain/resume' },
  { scope: 'cancel', method: 'POST', path: '/v1/destinations/:domain/purge' },
  { scope: 'send', method: 'POST', path: '/v1/send' },
  { scope: 'send', method: 'POST', path: '/v1/send-raw' },
  { scope: 'send', method: 'POST', path: '/v1/send/batch' },
  // Template draft operations: create, save or discard a draft, publish, list versions, PATCH.
  { scope: 'send', method: 'POST', path: '/v1/templates' },
  { scope: 'send', method: 'PUT', path: '/v1/templates/:slug/draft' },
  { scope: 'send', method: 'DELETE', path: '/v1/templates/:slug/draft' },
  { scope: 'send', method: 'POST', path: '/v1/templates/:slug/publish' },
  { scope: 'send', method: 'GET', path: '/v1/templates/:slug/versions' },
  { scope: 'send', method: 'PATCH', path: '/v1/templates/:slug' },
  { scope: 'send', method: 'POST', path: '/v1/suppressions' },
  { scope: 'send', method: 'POST', path: '/v1/suppressions/import' },
  { scope: 'send', method: 'DELETE', path: '/v1/suppressions/:address' },
  { scope: 'send', method: 'POST', path: '/v1/messages/:id/retry' },
  { scope: 'read', method: 'GET', path: '/v1/messages/:id/checks' },
  { scope: 'read', method: 'POST', path: '/v1/messages/:id/checks' },
  { scope: 'cancel', method: 'DELETE', path: '/v1/messages/:id' },
  { scope: 'inbound', method: null, path: /^\/v1\/inbound\// },
  { scope: 'webhooks', method: null, path: /^\/v1\/webhooks(\/|$)/ },
  // SMTP credentials: no more than a send-scoped key can do, so a send key may make them.
  { scope: 'send', method: null, path: /^\/v1\/smtp-credentials(\/|$)/ },
  { scope: 'cluster', method: 'GET', path: '/v1/nodes' },
];

const matches = (row: Row, route: { method: string; path: string }) =>
  (row.method === null || row.method === route.method) &&
  (typeof row.path === 'string' ? row.path === route.path : row.path.test(route.path));

// Routes outside /v1 take no API key: tracking, unsubscribe, provider callbacks, health and
// readiness, the API reference page (/docs), the MTA-STS policy file (public by design,
// test/domains/mta-sts-serve.test.ts), the ACME HTTP-01 answers (the CA fetches them without a key,
// test/certificates/acme.test.ts); and the dashboard, which takes an operator's session
// (test/http/dashboard/ covers it).
const OPEN =
  /^\/(healthz$|readyz$|t\/|u\/|callbacks\/|\.well-known\/mta-sts\.txt$|\.well-known\/acme-challenge\/:token$|$|dashboard(\/|$)|docs(\/|$))/;
// The hosted vendors' APIs take a key in the vendor's auth style; test/compat/ checks their scopes.
const VENDOR = /^\/compat\/(resend|postmark|sendgrid|mailgun)\//;
// The one /v1 route without a key: the API description (test/http/openapi.test.ts).
const OPEN_V1 = ['/v1/openapi.json'];

// Plausible values for path parameters, so each request reaches its route.
const PARAMS: Record<string, string> = {
  id: 'x1',
  slug: 'welcome',
  address: 'bob@example.net',
  index: '0',
  deliveryId: 'x2',
  connectionId: 'x3',
  token: 'x4',
};

for (const db of testDatabases()) {
  t.test(`each scope alone against every route: exactly the scope table (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    await d.workspace('acme', { plan: 'pro' });
    const keys = {} as Record<Scope | 'unscoped', string>;
    for (const scope of SCOPES) {
      const k = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', scope);
      t.same(k.json.scopes, [scope], `a key with ${scope} alone`);
      keys[scope] = k.json.secret;
    }
    keys.unscoped = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live')).json.secret;

    const routes = d.app.routes();
    const api = routes.filter((r) => r.path.startsWith('/v1/') && !OPEN_V1.includes(r.path));
    t.same(
      routes.filter((r) => !r.path.startsWith('/v1/') && !OPEN.test(r.path) && !VENDOR.test(r.path)),
      [],
      'every route that is not under /v1 is an open one or the dashboard',
    );
    t.ok(api.length >= 38, `the router stack lists the API routes (${api.length})`);

    // The table covers every route exactly once, and every exact row names a route that exists.
    const required = new Map<string, Scope>();
    for (const route of api) {
      const rows = TABLE.filter((row) => matches(row, route));
      t.equal(rows.length, 1, `${route.method} ${route.path} has one row in the scope table`);
      if (rows.length === 1) required.set(`${route.method} ${route.path}`, rows[0].scope);
    }
    for (const row of TABLE)
      t.ok(
        api.some((route) => matches(row, route)),
        `row ${row.method} ${String(row.path)} names a served route`,
      );
    t.same([...new Set(required.values())].sort(), [...SCOPES].sort(), 'every scope authorizes some route');

    // The API description names the same scope for each operation as this table.
    const doc = (await d.request('GET', '/v1/openapi.json')).body;
    for (const [route, scope] of required) {
      const [method, path] = route.split(' ');
      const op = doc.paths[path.replace(/:([A-Za-z]+)/g, '{$1}')]?.[method.toLowerCase()];
      t.equal(op?.['x-postern-scope'], scope, `the API description gives ${route} scope ${scope}`);
      t.same(op?.security, [{ apiKey: [scope] }], `the API description's security for ${route} is the ${scope} key`);
    }

    let calls = 0;
    for (const route of api) {
      const need = required.get(`${route.method} ${route.path}`);
      if (!need) continue;
      const path = route.path.replace(/:([A-Za-z]+)/g, (_m, name: string) => encodeURIComponent(PARAMS[name] ?? 'x'));
      const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : {};
      for (const holder of [...SCOPES, 'unscoped'] as const) {
        const r = await d.request(route.method, path, { key: keys[holder], body });
        calls++;
        const what = `${route.method} ${route.path} with ${holder === 'unscoped' ? 'an unscoped key' : `scope ${holder} alone`}`;
        if (holder === need || (holder === 'unscoped' && !NOT_UNSCOPED.includes(need))) {
          t.not(r.status, 403, `${what}: allowed (${r.status} ${r.body?.error?.code ?? ''})`);
          t.not(r.status, 401, `${what}: authenticated`);
        } else {
          t.equal(r.status, 403, `${what}: forbidden`);
          t.match(r.body, { error: { code: 'insufficient_scope', message: new RegExp(`\\b${need}\\b`) } }, `${what}: names scope ${need}`);
        }
      }
    }
    t.equal(calls, api.length * (SCOPES.length + 1));
  });
}
