// The HTTP edge against hostile input, over every route the daemon serves (the list comes from the
// app itself, so a route added later is covered): malformed percent-encoding in path parameters,
// bodies that are not JSON, not decodable, or nested beyond reason. Every answer is a 4xx in the
// error envelope, never a 500.
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { dashboardLogin } from '../helpers/dashboard.js';

const BAD_ESCAPES = ['%', '%E0%A4%A', '%ZZ', '%C0%AF', 'a%2', '%FF%FE'];

// Postern's envelope, and each vendor API's own error shape (src/http/compat/).
const envelope = (b: any) => typeof b?.error?.code === 'string' && typeof b?.error?.message === 'string';
const VENDOR_ERRORS: Record<string, (b: any) => boolean> = {
  resend: (b) => typeof b?.statusCode === 'number' && typeof b?.name === 'string' && typeof b?.message === 'string',
  postmark: (b) => typeof b?.ErrorCode === 'number' && typeof b?.Message === 'string',
  sendgrid: (b) => Array.isArray(b?.errors) && b.errors.length > 0 && b.errors.every((e: any) => typeof e?.message === 'string'),
  mailgun: (b) => typeof b?.message === 'string',
};

for (const db of testDatabases()) {
  t.test(`every route answers malformed input with a 4xx in the envelope (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const routes = d.app.routes();
    t.ok(routes.length > 40, `the route table lists every route (${routes.length})`);
    t.ok(routes.some((r) => r.path === '/v1/messages/:id' && r.method === 'GET'));

    // Dashboard routes are reached as the page reaches them: with a session cookie and its CSRF token.
    const operator = await dashboardLogin(d);
    const credentials = (path: string): Record<string, string> =>
      path.startsWith('/dashboard')
        ? { cookie: operator.cookie, 'x-csrf-token': operator.csrf }
        : path.startsWith('/compat/postmark')
          ? { 'x-postmark-server-token': ws.live }
          : path.startsWith('/compat/mailgun')
            ? { authorization: `Basic ${Buffer.from(`api:${ws.live}`).toString('base64')}` }
            : { authorization: `Bearer ${ws.live}` };
    const send = async (method: string, path: string, init: { body?: Buffer | string; headers?: Record<string, string> } = {}) => {
      const res = await fetch(d.url + path, { method, headers: { ...credentials(path), ...init.headers }, body: init.body });
      const text = await res.text();
      return { status: res.status, text };
    };
    const check = (what: string, r: { status: number; text: string }) => {
      if (r.status >= 500) return t.fail(`${what}: ${r.status} ${r.text.slice(0, 200)}`);
      if (r.status >= 400 && r.text) {
        let body: any;
        try {
          body = JSON.parse(r.text);
        } catch {
          return t.fail(`${what}: ${r.status} without the JSON envelope: ${r.text.slice(0, 200)}`);
        }
        const vendor = /^\S+ \/compat\/(\w+)\//.exec(what)?.[1];
        if (!(vendor ? VENDOR_ERRORS[vendor] : envelope)(body)) t.fail(`${what}: no error envelope: ${r.text.slice(0, 200)}`);
      }
    };

    let cases = 0;
    for (const route of routes) {
      if (route.path.includes(':')) {
        for (const bad of BAD_ESCAPES) {
          const path = route.path.replace(/:([A-Za-z]+)/g, () => bad);
          const r = await send(
            route.method,
            path,
            route.method === 'GET' || route.method === 'DELETE' ? {} : { body: '{}', headers: { 'content-type': 'application/json' } },
          );
          check(`${route.method} ${path}`, r);
          // The vendors' APIs answer their own statuses (Resend: 422 invalid_parameter).
          if (r.status !== 404 && !path.startsWith('/compat/'))
            t.equal(r.status, 400, `${route.method} ${path}: a path that does not decode is 400`);
          cases++;
        }
      }
      if (route.method === 'GET' || route.method === 'HEAD') continue;
      // Logging out would end the session the rest of the walk uses (test/http/dashboard/session.test.ts covers it).
      if (route.path === '/dashboard/api/logout') continue;
      const path = route.path.replace(/:([A-Za-z]+)/g, (_m, name: string) => (name === 'slug' ? 'welcome' : `x${name}`));
      const bodies: [string, { body?: Buffer | string; headers?: Record<string, string> }][] = [
        ['not JSON', { body: '{"to": ', headers: { 'content-type': 'application/json' } }],
        ['form-encoded', { body: 'to=ann%40example.com&channel=email', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
        ['text/plain', { body: '{"to":"ann@example.com"}', headers: { 'content-type': 'text/plain' } }],
        ['no content type', { body: '{"to":"ann@example.com"}', headers: {} }],
        [
          'undecodable gzip',
          { body: Buffer.from('this is not gzip at all'), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } },
        ],
        [
          'truncated gzip',
          {
            body: gzipSync(Buffer.from('{"to":"ann@example.com","channel":"email"}')).subarray(0, 20),
            headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          },
        ],
        [
          'undecodable br',
          { body: Buffer.from([0xff, 0xfe, 0xfd, 0x00, 0x01]), headers: { 'content-type': 'application/json', 'content-encoding': 'br' } },
        ],
        [
          'undecodable deflate',
          { body: Buffer.from('nope'), headers: { 'content-type': 'application/json', 'content-encoding': 'deflate' } },
        ],
        ['unknown encoding', { body: '{}', headers: { 'content-type': 'application/json', 'content-encoding': 'snappy' } }],
        ['unknown charset', { body: '{}', headers: { 'content-type': 'application/json; charset=klingon' } }],
        ['deeply nested JSON', { body: '['.repeat(200_000) + ']'.repeat(200_000), headers: { 'content-type': 'application/json' } }],
        ['JSON array', { body: '[1,2,3]', headers: { 'content-type': 'application/json' } }],
        ['JSON null', { body: 'null', headers: { 'content-type': 'application/json' } }],
      ];
      for (const [what, init] of bodies) {
        check(`${route.method} ${path} with ${what}`, await send(route.method, path, init));
        cases++;
      }
    }
    t.ok(cases > 300, `${cases} malformed requests`);
  });

  t.test(`a body that is not JSON is refused as such, on /v1 routes that take one (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${d.url}/v1/send`, { method: 'POST', headers: { authorization: `Bearer ${ws.test}`, ...headers }, body }).then(async (r) => ({
        status: r.status,
        body: await r.json(),
      }));
    const form = await post({ 'content-type': 'application/x-www-form-urlencoded' }, 'to=ann%40example.com');
    t.match(form, { status: 415, body: { error: { code: 'unsupported_media_type', message: /send JSON/ } } });
    const none = await post({}, '{"to":"ann@example.com"}');
    t.match(none, { status: 415, body: { error: { code: 'unsupported_media_type', message: /send JSON/ } } });
    const broken = await post({ 'content-type': 'application/json' }, '{"to": ');
    t.match(broken, { status: 400, body: { error: { code: 'invalid_request' } } });
    const gz = await fetch(`${d.url}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.test}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: 'not gzip',
    });
    t.match(
      { status: gz.status, body: await gz.json() },
      { status: 400, body: { error: { code: 'invalid_request', message: /decompress/ } } },
    );
    // A JSON send with the right type still works, and so does one with a charset parameter.
    const ok = await post(
      { 'content-type': 'application/json; charset=utf-8' },
      JSON.stringify({ to: 'ann@example.com', channel: 'email', content: { subject: 's', text: 't' } }),
    );
    t.equal(ok.status, 202);
  });

  t.test(`a template nesting sections thousands deep is refused, not a stack overflow (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const created = await d.request('POST', '/v1/templates', { key: ws.live, body: { slug: 'deep', channel: 'email' } });
    t.equal(created.status, 201);
    const nested = '{{#a}}'.repeat(5000) + 'x' + '{{/a}}'.repeat(5000);
    const draft = await d.request('PUT', '/v1/templates/deep/draft', { key: ws.live, body: { content: { subject: 'S', html: nested } } });
    t.match(draft, { status: 422, body: { error: { code: 'invalid_body', issues: [{ path: 'content.html', message: /nest/ }] } } });
    const inline = await d.request('POST', '/v1/send-raw', {
      key: ws.test,
      body: { to: 'ann@example.com', channel: 'email', interpolate: true, content: { subject: 'S', html: nested } },
    });
    t.match(inline, { status: 422, body: { error: { code: 'invalid_body', issues: [{ path: 'content.html', message: /nest/ }] } } });
  });
}
