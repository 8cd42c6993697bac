// Mailgun's own SDK (`mailgun.js` from npm), unmodified, with its `url` pointed at /compat/mailgun
// of a daemon started here and a Postern key as its key: a form with several recipients,
// attachments, variables, tags, a template and a delivery time succeeds, the messages reach a
// loopback MX whole and DKIM-signed (Python's email package and dkimpy), and errors come back in
// Mailgun's shape, which the SDK raises as its own error.
import t from 'tap';
import Mailgun from 'mailgun.js';
import { testDatabases } from '../helpers/databases.js';
import { vendorSetup } from '../helpers/vendor-sdk.js';

const TEXT = 'Hello from Mailgun’s SDK.\n';
const HTML = '<p>Hello from <b>Mailgun’s SDK</b>.</p>';
const CSV = Buffer.from('a,b\n1,2\n');

for (const db of testDatabases()) {
  t.test(`the mailgun.js SDK against /compat/mailgun on ${db}`, async (t) => {
    const { d, ws, message, template, copyFor, deliveredWhole } = await vendorSetup(t, db);
    const client = (key: string) => new Mailgun(FormData).client({ username: 'api', key, url: `${d.url}/compat/mailgun` });
    const mg = client(ws.live);
    const list = (q: string) => d.request('GET', `/v1/messages?q=${encodeURIComponent(q)}`, { key: ws.live });

    t.test('messages.create: one message per recipient, delivered whole and signed', async (t) => {
      const sent = await mg.messages.create('acme.example', {
        from: 'Acme App <app@acme.example>',
        to: ['ann@example.net', 'Bob <bob@example.net>'],
        cc: 'carol@example.net',
        subject: 'Your statement',
        text: TEXT,
        html: HTML,
        'h:Reply-To': 'help@acme.example',
        'o:tag': ['statement', 'monthly'],
        'v:account': '4711',
        attachment: [{ filename: 'statement.csv', data: CSV, contentType: 'text/csv' }],
      });
      t.match(sent, { status: 200, id: /^<msg_[A-Za-z0-9]+>$/, message: 'Queued. Thank you.' });
      const first = await message(sent.id!.slice(1, -1));
      t.match(first.body, {
        recipient: 'ann@example.net',
        metadata: { tag: 'statement,monthly', account: '4711' },
        fromOverride: 'app@acme.example',
        fromNameOverride: 'Acme App',
      });
      await deliveredWhole(t, ['ann@example.net', 'bob@example.net', 'carol@example.net'], {
        replyTo: 'help@acme.example',
        subject: 'Your statement',
        text: TEXT,
        html: HTML,
        attachments: [{ filename: 'statement.csv', contentType: 'text/csv', content: CSV.toString('base64') }],
      });
    });

    t.test('a template with t:variables, and o:deliverytime', async (t) => {
      await template('statement', 'Statement for {{name}}', 'Balance {{balance}}');
      await mg.messages.create('acme.example', {
        from: 'app@acme.example',
        to: 'dee@example.net',
        template: 'statement',
        't:variables': JSON.stringify({ name: 'Dee', balance: '12.00' }),
      });
      t.match((await copyFor('dee@example.net')).raw.toString('utf8'), /Subject: Statement for Dee/);
      const later = new Date(d.clock.now().getTime() + 3600_000);
      later.setUTCMilliseconds(0);
      await mg.messages.create('acme.example', {
        from: 'app@acme.example',
        to: 'later@example.net',
        subject: 'Later',
        text: 'later',
        'o:deliverytime': later.toUTCString(),
      });
      t.match((await list('later@example.net')).body.data, [{ status: 'scheduled', scheduledAt: later.toISOString() }]);
    });

    t.test("errors come back in Mailgun's shape, raised as the SDK's error", async (t) => {
      const refused = async (key: string, data: Record<string, unknown>) =>
        (await client(key)
          .messages.create('acme.example', data as never)
          .catch((e: unknown) => e)) as { status: number; details: string; message: string };
      const noText = await refused(ws.live, { from: 'app@acme.example', to: 'x@example.net', subject: 's' });
      t.equal(noText.status, 400);
      t.match(noText.details, /at least one of 'text', 'html' or 'template'/);
      const testMode = await refused(ws.live, {
        from: 'app@acme.example',
        to: 'x@example.net',
        subject: 's',
        text: 't',
        'o:testmode': 'yes',
      });
      t.equal(testMode.status, 400);
      t.match(testMode.details, /o:testmode.*test key/);
      const header = await refused(ws.live, {
        from: 'app@acme.example',
        to: 'x@example.net',
        subject: 's',
        text: 't',
        'h:X-Campaign': 'c1',
      });
      t.match(header.details, /h:X-Campaign: is not supported/, 'a custom header is refused by name, not dropped');
      t.equal((await list('x@example.net')).body.data.length, 0, 'nothing stored');
      const denied = await refused('sk_live_nope', { from: 'app@acme.example', to: 'x@example.net', subject: 's', text: 't' });
      t.equal(denied.status, 401);
      const readOnly = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read')).json.secret as string;
      const scoped = await refused(readOnly, { from: 'app@acme.example', to: 'x@example.net', subject: 's', text: 't' });
      t.equal(scoped.status, 403, 'a key without the send scope cannot send');
      const json = await fetch(`${d.url}/compat/mailgun/v3/acme.example/messages`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`api:${ws.live}`).toString('base64')}`, 'content-type': 'application/json' },
        body: '{}',
      });
      t.equal(json.status, 400, 'a JSON body is not a form');
      const unsupported = await fetch(`${d.url}/compat/mailgun/v3/acme.example/events`, {
        headers: { authorization: `Basic ${Buffer.from(`api:${ws.live}`).toString('base64')}` },
      });
      t.equal(unsupported.status, 404);
      t.match(await unsupported.json(), { message: /not supported.*POST \/v3\/\{domain\}\/messages/ });
    });
  });
}
