// One nesting limit for every JSON body the daemon reads (/v1, /dashboard/api, the signed provider
// callbacks) and the dashboard's preview vars: a body nested past MAX_JSON_DEPTH is a 422 naming
// the limit before anything walks it, never a stack overflow's 500. Wide bodies and the body size
// limits stay as documented.
import t from 'tap';
import { signHttpSms } from '../../src/channels/sms/http-gateway.js';
import { MAX_JSON_DEPTH } from '../../src/lib/json-depth.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { dashboardLogin } from '../helpers/dashboard.js';

/** `n` objects, one inside the other: `{"a":{"a":…1…}}`. */
const nested = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
/** An inline send whose vars nest `n` objects deep: the body itself is then n + 1 deep. */
const sendWithVars = (vars: string) => `{"to":"ann@example.com","channel":"email","content":{"subject":"s","text":"t"},"vars":${vars}}`;

t.equal(MAX_JSON_DEPTH, 64, 'the documented limit (docs/api/README.md, Limits)');

for (const db of testDatabases()) {
  t.test(`the JSON nesting limit on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const post = (path: string, rawBody: string) => d.request('POST', path, { key: ws.test, rawBody });
    const tooDeep = {
      status: 422,
      body: { error: { code: 'invalid_body', message: /nested deeper than 64 levels/, issues: [{ path: '', message: /64/ }] } },
    };

    t.test('vars nested 10,000 deep in POST /v1/send', async (t) => {
      const r = await post('/v1/send', sendWithVars(nested(10_000)));
      t.match(r, tooDeep);
      t.equal((await d.request('GET', '/v1/messages', { key: ws.test })).body.data.length, 0, 'nothing was stored');
    });

    t.test('the limit itself: 64 levels are taken, 65 refused', async (t) => {
      const at = await post('/v1/send', sendWithVars(nested(MAX_JSON_DEPTH - 1)));
      t.equal(at.status, 202, JSON.stringify(at.body));
      t.match(await post('/v1/send', sendWithVars(nested(MAX_JSON_DEPTH))), tooDeep);
      // Arrays count as objects do, and brackets inside strings (escaped quotes too) do not count.
      t.match(await post('/v1/send', sendWithVars(`{"a":${'['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH)}}`)), tooDeep);
      const inStrings = `{"s":"${'[{'.repeat(5000)}\\"${'{'.repeat(5000)}","t":"\\\\"}`;
      const fine = await post('/v1/send', sendWithVars(inStrings));
      t.equal(fine.status, 202, 'brackets inside strings are text');
    });

    t.test('other /v1 bodies: a render and a template draft', async (t) => {
      t.equal((await d.request('POST', '/v1/templates', { key: ws.test, body: { slug: 'hello', channel: 'email' } })).status, 201);
      t.match(await post('/v1/templates/hello/render', `{"vars":${nested(10_000)}}`), tooDeep);
      const draft = await d.request('PUT', '/v1/templates/hello/draft', {
        key: ws.test,
        rawBody: `{"content":{"subject":"S","html":"x"},"variables":${'['.repeat(10_000) + ']'.repeat(10_000)}}`,
      });
      t.match(draft, tooDeep);
      const fine = await d.request('PUT', '/v1/templates/hello/draft', {
        key: ws.test,
        body: { content: { subject: 'S', html: '<p>{{a}}</p>' } },
      });
      t.equal(fine.status, 200);
    });

    t.test('the dashboard API and its template preview', async (t) => {
      const operator = await dashboardLogin(d);
      await operator.select(ws.id, 'test');
      const res = await fetch(`${d.url}/dashboard/api/templates/hello/test-send`, {
        method: 'POST',
        headers: { cookie: operator.cookie, 'x-csrf-token': operator.csrf, 'content-type': 'application/json' },
        body: `{"to":"ann@example.com","vars":${nested(10_000)}}`,
      });
      t.match({ status: res.status, body: await res.json() }, tooDeep);
      // A query is bounded by Node's 16 KiB of headers, so this one nests 2,000 deep.
      const deepVars = `{"a":${'['.repeat(2000) + ']'.repeat(2000)}}`;
      const preview = await fetch(`${d.url}/dashboard/view/templates/hello?version=1&vars=${encodeURIComponent(deepVars)}`, {
        headers: { cookie: operator.cookie },
      });
      t.match(
        { status: preview.status, body: await preview.json() },
        { status: 400, body: { error: { code: 'invalid_request', message: /nested deeper than 64 levels/ } } },
      );
    });

    t.test('a signed provider callback', async (t) => {
      const secret = 'gateway-hmac-secret-a1b2c3';
      const add = await d.cli(
        'connection',
        'add',
        '--workspace',
        'acme',
        '--env',
        'live',
        '--channel',
        'sms',
        '--provider',
        'http',
        '--url',
        'https://gateway.example/send',
        '--secret',
        secret,
      );
      t.equal(add.code, 0, add.stderr);
      const body = `{"id":"gw-1","status":"sent","extra":${nested(10_000)}}`;
      const now = String(Math.floor(d.clock.now().getTime() / 1000));
      const res = await fetch(`${d.url}/callbacks/sms-http/${add.json.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-postern-timestamp': now, 'x-postern-signature': signHttpSms(secret, now, body) },
        body,
      });
      t.match({ status: res.status, body: await res.json() }, tooDeep);
    });

    t.test('wide bodies are only as limited as their size', async (t) => {
      // 200,000 keys side by side, 2.6 MB: wide is not deep.
      const wide = `{${Array.from({ length: 200_000 }, (_, i) => `"k${i}":${i}`).join(',')}}`;
      const r = await post('/v1/send', sendWithVars(wide));
      t.equal(r.status, 202, JSON.stringify(r.body).slice(0, 200));
      const list = `{"a":[${'0,'.repeat(500_000)}0]}`;
      t.equal((await post('/v1/send', sendWithVars(list))).status, 202);
    });
  });
}

t.test('the body size limits stay as documented', async (t) => {
  const d = await bootDaemon(t);
  const ws = await d.workspace('acme');
  // http.bodyLimit (40mb by default, docs/configuration.md): one byte over is 413 before it is read.
  const over = Buffer.alloc(40 * 1024 * 1024 + 1, 0x20);
  const big = await fetch(`${d.url}/v1/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.test}`, 'content-type': 'application/json' },
    body: over,
  });
  t.match({ status: big.status, body: await big.json() }, { status: 413, body: { error: { code: 'payload_too_large' } } });
  // The dashboard API takes 1 MiB (docs/dashboard.md).
  const operator = await dashboardLogin(d);
  const dash = await fetch(`${d.url}/dashboard/api/selection`, {
    method: 'PUT',
    headers: { cookie: operator.cookie, 'x-csrf-token': operator.csrf, 'content-type': 'application/json' },
    body: Buffer.alloc(1024 * 1024 + 1, 0x20),
  });
  t.match({ status: dash.status, body: await dash.json() }, { status: 413, body: { error: { code: 'payload_too_large' } } });
});

t.test('a body in another charset than UTF-8 is refused (the depth check reads UTF-8)', async (t) => {
  const d = await bootDaemon(t);
  const ws = await d.workspace('acme');
  const body = Buffer.from(sendWithVars(nested(10_000)), 'utf16le');
  const res = await fetch(`${d.url}/v1/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.test}`, 'content-type': 'application/json; charset=utf-16le' },
    body,
  });
  t.match({ status: res.status, body: await res.json() }, { status: 400, body: { error: { code: 'invalid_request', message: /UTF-8/ } } });
});
