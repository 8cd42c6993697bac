// The isolated HTML views of the dashboard over plain HTTP: received mail and template previews
// are served with their own CSP (no script-src, the CSP sandbox, remote images only on request),
// links made to open in a new tab with noopener; both need the session. Also the dashboard's test
// send and the address deactivation they sit beside.
import t from 'tap';
import type { TestDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { dashboardLogin } from '../../helpers/dashboard.js';
import { createAddress, sendRaw, setup } from '../../helpers/inbound.js';

/** A dashboard session over HTTP: the cookie and CSRF headers, with the workspace/env selected. */
async function session(d: TestDaemon, workspaceId: string, env: 'live' | 'test' = 'live') {
  const dash = await dashboardLogin(d);
  await dash.select(workspaceId, env);
  return { cookie: dash.cookie, 'x-csrf-token': dash.csrf };
}

export function htmlMail(to: string, html: string): string {
  return [
    'From: Mallory <mallory@sender.example>',
    `To: ${to}`,
    'Subject: Hostile',
    'Message-ID: <hostile@sender.example>',
    'Date: Mon, 02 Jan 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/html; charset=utf-8',
    '',
    html,
    '',
  ].join('\r\n');
}

for (const db of testDatabases()) {
  t.test(`received mail HTML is served alone with its own CSP (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d, ws } = env;
    const addr = await createAddress(env, { localPart: 'support' });
    const html =
      '<p>Hi</p><script>window.__pwned = 1</script><img src="http://127.0.0.1:9/pixel.png">' +
      '<a href="https://evil.example/" rel="opener" target="_self">click</a><AREA href="https://x.example/">';
    await sendRaw(d.smtpPort, { from: 'mallory@sender.example', to: [addr.address] }, htmlMail(addr.address, html));
    const list = await d.request('GET', '/v1/inbound/messages', { key: ws.live });
    const id = list.body.messages[0].id as string;
    const headers = await session(d, ws.id);

    const res = await fetch(`${d.url}/dashboard/view/inbound/${id}`, { headers: { cookie: headers.cookie } });
    t.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy')!;
    t.equal(
      csp,
      "default-src 'none'; style-src 'unsafe-inline'; img-src data: cid:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox allow-popups allow-popups-to-escape-sandbox",
    );
    t.notMatch(csp, /script-src/, 'no script-src: scripts fall to default-src none');
    t.notMatch(csp, /allow-scripts|allow-same-origin/);
    t.equal(res.headers.get('x-content-type-options'), 'nosniff');
    t.equal(res.headers.get('referrer-policy'), 'no-referrer');
    t.match(res.headers.get('content-type'), /^text\/html/);
    const body = await res.text();
    t.match(body, /<base target="_blank">/);
    t.match(body, /<a rel="noopener noreferrer" target="_blank" href="https:\/\/evil.example\/" rel="opener" target="_self">/);
    t.match(body, /<AREA rel="noopener noreferrer" target="_blank" href=/);

    const remote = await fetch(`${d.url}/dashboard/view/inbound/${id}?remote=1`, { headers: { cookie: headers.cookie } });
    t.match(remote.headers.get('content-security-policy'), /img-src data: cid: https: http:;/);
    t.match(remote.headers.get('content-security-policy'), /sandbox allow-popups allow-popups-to-escape-sandbox/);

    t.equal((await fetch(`${d.url}/dashboard/view/inbound/${id}`)).status, 401, 'no session: 401');
    // The test environment holds no such message.
    const testSession = await session(d, ws.id, 'test');
    t.equal((await fetch(`${d.url}/dashboard/view/inbound/${id}`, { headers: { cookie: testSession.cookie } })).status, 404);

    // Attachments download, never render inline.
    t.test('attachment route answers Content-Disposition: attachment', async (t) => {
      const raw = [
        'From: a@sender.example',
        `To: ${addr.address}`,
        'Subject: with file',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary=b',
        '',
        '--b',
        'Content-Type: text/plain',
        '',
        'see file',
        '--b',
        'Content-Type: text/html; name="x.html"',
        'Content-Disposition: attachment; filename="x.html"',
        '',
        '<script>alert(1)</script>',
        '--b--',
        '',
      ].join('\r\n');
      await sendRaw(d.smtpPort, { from: 'a@sender.example', to: [addr.address] }, raw);
      const msgs = await d.request('GET', '/v1/inbound/messages', { key: ws.live });
      const mid = msgs.body.messages.find((m: { subject: string }) => m.subject === 'with file').id;
      const detail = await d.request('GET', `/v1/inbound/messages/${mid}`, { key: ws.live });
      const index = detail.body.attachments[0].index as number;
      const a = await fetch(`${d.url}/v1/inbound/messages/${mid}/attachments/${index}`, { headers: { cookie: headers.cookie } });
      t.equal(a.status, 200, 'the session cookie authenticates the download');
      t.match(a.headers.get('content-disposition'), /^attachment;/);
      t.equal(a.headers.get('x-content-type-options'), 'nosniff');
      const rawRes = await fetch(`${d.url}/v1/inbound/messages/${mid}/raw`, { headers: { cookie: headers.cookie } });
      t.equal(rawRes.headers.get('content-disposition'), `attachment; filename="${mid}.eml"; filename*=UTF-8''${mid}.eml`);
    });
  });

  t.test(`an address is deactivated and stays listed, inactive (${db})`, async (t) => {
    const env = await setup(t, { db });
    const addr = await createAddress(env, { localPart: 'sales' });
    const res = await env.d.request('POST', `/v1/inbound/addresses/${addr.id}/deactivate`, { key: env.ws.live });
    t.equal(res.status, 200);
    t.equal(res.body.active, false);
    const list = await env.d.request('GET', '/v1/inbound/addresses', { key: env.ws.live });
    t.match(list.body.addresses, [{ id: addr.id, active: false }]);
    const again = await env.d.request('POST', `/v1/inbound/addresses/adr_nope/deactivate`, { key: env.ws.live });
    t.equal(again.status, 404);
    // Mail to it is no longer routed to it: it is received as to an unknown local part.
    await sendRaw(env.d.smtpPort, { from: 'a@sender.example', to: [addr.address] }, htmlMail(addr.address, '<p>x</p>')).catch(() => null);
    const received = await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live });
    t.notOk(
      received.body.messages.some((m: { status: string }) => m.status === 'received'),
      JSON.stringify(received.body.messages.map((m: { status: string }) => m.status)),
    );
  });

  t.test(`template preview: own CSP, renders a draft with vars; test send goes to the test env (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d, ws } = env;
    const headers = await session(d, ws.id, 'live');
    const tpl = await d.request('POST', '/v1/templates', { key: ws.live, body: { slug: 'welcome', channel: 'email' } });
    t.equal(tpl.status, 201);
    await d.request('PUT', '/v1/templates/welcome/draft', {
      key: ws.live,
      body: { content: { subject: 'Hi {{name}}', html: '<p>Hello {{name}}</p><a href="https://x.example/">x</a>' } },
    });
    const vars = encodeURIComponent(JSON.stringify({ name: 'Ada' }));
    const res = await fetch(`${d.url}/dashboard/view/templates/welcome?version=1&vars=${vars}`, { headers: { cookie: headers.cookie } });
    t.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy')!;
    t.notMatch(csp, /script-src/);
    t.match(csp, /sandbox allow-popups allow-popups-to-escape-sandbox/);
    t.match(csp, /img-src data: cid:;/, 'remote images blocked on open, as for received mail');
    t.match(await res.text(), /Hello Ada/);
    const remote = await fetch(`${d.url}/dashboard/view/templates/welcome?version=1&vars=${vars}&remote=1`, {
      headers: { cookie: headers.cookie },
    });
    t.match(remote.headers.get('content-security-policy'), /img-src data: cid: https: http:;/, 'and loaded once asked');
    const bad = await fetch(`${d.url}/dashboard/view/templates/welcome?version=1&vars=nope`, { headers: { cookie: headers.cookie } });
    t.equal(bad.status, 400);

    // The session acts on live; the test send still lands in the test environment.
    const sent = await d.request('POST', '/dashboard/api/templates/welcome/test-send', {
      headers,
      body: { to: 'ada@example.com', vars: { name: 'Ada' } },
    });
    t.equal(sent.status, 202, JSON.stringify(sent.body));
    t.equal(sent.body.livemode, false);
    t.equal((await d.request('GET', `/v1/messages/${sent.body.id}`, { key: ws.test })).status, 200);
    t.equal((await d.request('GET', `/v1/messages/${sent.body.id}`, { key: ws.live })).status, 404);
    const noCsrf = await d.request('POST', '/dashboard/api/templates/welcome/test-send', {
      headers: { cookie: headers.cookie },
      body: { to: 'ada@example.com' },
    });
    t.equal(noCsrf.status, 403);
  });
}
