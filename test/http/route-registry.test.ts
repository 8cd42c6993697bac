// The routers the app serves are the ones http/routes/registry.ts declares, in its order, at their
// mounts, and nothing else: besides them the app answers only its own probes (/healthz, /readyz),
// the dashboard (and / leading to it) and the vendors' APIs (/compat/<vendor>, one per declared vendor).
import t from 'tap';
import { ROUTES, VENDOR_APIS } from '../../src/http/routes/registry.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

const key = (r: { method: string; path: string }) => `${r.method} ${r.path}`;

for (const db of testDatabases()) {
  t.test(`what the app mounts is what the route registry declares (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const routers = d.app.routers();
    t.same(
      routers.map((r) => `${r.mount} ${r.name}`),
      ROUTES.map((r) => `${r.mount} ${r.name}`),
      'every declared router is built, in the declared order',
    );
    for (const r of routers) t.ok(r.routes.length > 0, `${r.name} serves routes`);

    const declared = [
      ...routers.filter((r) => r.mount === 'open').flatMap((r) => r.routes),
      ...routers.filter((r) => r.mount === 'v1-stream').flatMap((r) => r.routes.map((x) => ({ ...x, path: `/v1${x.path}` }))),
      ...routers.filter((r) => r.mount === 'v1').flatMap((r) => r.routes.map((x) => ({ ...x, path: `/v1${x.path}` }))),
    ].map(key);
    const served = d.app.routes();
    // The probes, the dashboard (its pages, its API and the root that leads to it) and the vendors' APIs.
    const own = (path: string) => ['/healthz', '/readyz', '/'].includes(path) || /^\/(dashboard|compat)(\/|$)/.test(path);
    t.same(
      served.filter((r) => !own(r.path)).map(key),
      declared,
      'the app serves the declared routes, in mount order, and no other outside its own',
    );
    t.same(
      [...new Set(served.filter((r) => r.path.startsWith('/compat/')).map((r) => r.path.split('/')[2]))],
      VENDOR_APIS.map((v) => v.name),
      'one /compat/<vendor> per declared vendor API',
    );
  });
}
