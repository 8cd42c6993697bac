// An outbound message's content for the dashboard (src/http/dashboard/message-view.ts) over HTTP
// with a session: the HTML served alone under its own CSP (no script, no remote load, framed
// only by the dashboard), the .eml source as a download, the rendered JSON with the headers; a
// message of another environment is 404, and nothing is served without a session.
import t from 'tap';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { dashboardLogin } from '../../helpers/dashboard.js';

for (const db of testDatabases()) {
  t.test(`message view (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const dash = await dashboardLogin(d);
    await dash.select(ws.id, 'test');
    const cookie = dash.cookie;
    const get = (path: string) => fetch(d.url + path, { headers: { cookie } });

    const sent = await d.request('POST', '/v1/send', {
      key: ws.test,
      body: {
        to: 'ann@example.com',
        channel: 'email',
        interpolate: true,
        vars: { name: 'Ann' },
        content: { subject: 'Hi {{name}}', text: 'Hello {{name}}', html: '<p>Hello {{name}}</p><script>x()</script>' },
      },
    });
    t.equal(sent.status, 202);
    const id = sent.body.id as string;

    const html = await get(`/dashboard/view/messages/${id}/html`);
    t.equal(html.status, 200);
    t.equal(
      html.headers.get('content-security-policy'),
      "default-src 'none'; style-src 'unsafe-inline'; img-src data: cid:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox allow-popups allow-popups-to-escape-sandbox",
    );
    t.equal(html.headers.get('x-frame-options'), 'SAMEORIGIN', 'only the dashboard frames it');
    t.match(await html.text(), /Hello Ann/);

    const eml = await get(`/dashboard/view/messages/${id}/source.eml`);
    t.equal(eml.status, 200);
    t.match(eml.headers.get('content-type'), /^message\/rfc822/);
    t.equal(eml.headers.get('content-disposition'), `attachment; filename="${id}.eml"`);
    const source = await eml.text();
    t.match(source, new RegExp(`Message-ID: <${id}@mx.postern.test>`));
    t.match(source, /Subject: Hi Ann/);

    const rendered = (await (await get(`/dashboard/api/messages/${id}/rendered`)).json()) as any;
    t.match(rendered, { channel: 'email', output: { subject: 'Hi Ann', text: 'Hello Ann' } });
    t.ok(rendered.headers.some((h: [string, string]) => h[0] === 'To' && h[1] === 'ann@example.com'));

    const live = await d.request('POST', '/v1/send', {
      key: ws.live,
      body: { to: 'bob@example.com', channel: 'email', content: { subject: 'x', text: 'x' } },
    });
    t.equal((await get(`/dashboard/view/messages/${live.body.id}/html`)).status, 404, 'another environment');
    t.equal((await fetch(`${d.url}/dashboard/view/messages/${id}/html`)).status, 401, 'no session');
  });
}
