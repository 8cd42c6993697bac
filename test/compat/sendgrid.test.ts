// SendGrid's own SDK (`@sendgrid/mail` from npm), unmodified, with its client's baseUrl pointed at
// /compat/sendgrid of a daemon started here and a Postern key as the API key: mail sends with
// personalizations, templates, categories, custom args and send_at succeed, the messages reach a
// loopback MX whole and DKIM-signed (Python's email package and dkimpy), and errors come back in
// SendGrid's shape, which the SDK raises as its ResponseError.
import t from 'tap';
import sgMail from '@sendgrid/mail';
import { testDatabases } from '../helpers/databases.js';
import { vendorSetup } from '../helpers/vendor-sdk.js';

const TEXT = 'Hello from SendGrid’s SDK.\n';
const HTML = '<p>Hello from <b>SendGrid’s SDK</b>.</p>';
/** The SDK's mail service with its HTTP client, which the typings leave out. */
type Mail = typeof sgMail & { client: { setDefaultRequest(key: string, value: string): void } };

const PNG = Buffer.from('\x89PNG not really').toString('base64');

for (const db of testDatabases()) {
  t.test(`the @sendgrid/mail SDK against /compat/sendgrid on ${db}`, async (t) => {
    const { d, ws, message, template, copyFor, deliveredWhole } = await vendorSetup(t, db);
    const client = (key: string) => {
      // The package's default export is a ready instance; its class makes one per key.
      const mail = new (sgMail as unknown as { MailService: new () => Mail }).MailService();
      // setApiKey warns that a key does not start with "SG." (a Postern key does not): quiet it here.
      const warn = console.warn;
      console.warn = () => {};
      mail.setApiKey(key);
      console.warn = warn;
      mail.client.setDefaultRequest('baseUrl', `${d.url}/compat/sendgrid`);
      return mail;
    };
    const mail = client(ws.live);
    const list = (q: string) => d.request('GET', `/v1/messages?q=${encodeURIComponent(q)}`, { key: ws.live });

    t.test('send: to and cc each get a message, delivered whole and signed', async (t) => {
      const [response] = await mail.send({
        from: { email: 'app@acme.example', name: 'Acme App' },
        to: ['ann@example.net', 'bob@example.net'],
        cc: 'carol@example.net',
        replyTo: 'help@acme.example',
        subject: 'Your receipt',
        text: TEXT,
        html: HTML,
        attachments: [{ content: PNG, filename: 'logo.png', type: 'image/png', disposition: 'attachment' }],
        categories: ['receipt', 'shop'],
        customArgs: { order: '77' },
      });
      t.equal(response.statusCode, 202);
      const id = response.headers['x-message-id'] as string;
      t.match(id, /^msg_/);
      const first = await message(id);
      t.match(first.body, { recipient: 'ann@example.net', metadata: { categories: 'receipt,shop', order: '77' } });
      await deliveredWhole(t, ['ann@example.net', 'bob@example.net', 'carol@example.net'], {
        replyTo: 'help@acme.example',
        subject: 'Your receipt',
        text: TEXT,
        html: HTML,
        attachments: [{ filename: 'logo.png', contentType: 'image/png', content: PNG }],
      });
    });

    t.test('personalizations with a dynamic template, and send_at', async (t) => {
      await template('d-receipt', 'Thanks, {{name}}', 'Order {{order}}');
      const [response] = await mail.send({
        from: 'app@acme.example',
        templateId: 'd-receipt',
        personalizations: [
          { to: 'dee@example.net', dynamicTemplateData: { name: 'Dee', order: '1' } },
          { to: 'eve@example.net', dynamicTemplateData: { name: 'Eve', order: '2' } },
        ],
      });
      t.equal(response.statusCode, 202);
      t.match((await copyFor('eve@example.net')).raw.toString('utf8'), /Subject: Thanks, Eve/);
      const later = Math.floor(d.clock.now().getTime() / 1000) + 3600;
      await mail.send({ from: 'app@acme.example', to: 'later@example.net', subject: 'Later', text: 'later', sendAt: later });
      const scheduled = await list('later@example.net');
      t.match(scheduled.body.data, [{ status: 'scheduled', scheduledAt: new Date(later * 1000).toISOString() }]);
    });

    t.test('sandbox mode checks the request and sends nothing', async (t) => {
      const [response] = await mail.send({
        from: 'app@acme.example',
        to: 'sandbox@example.net',
        subject: 'Sandbox',
        text: 'nothing',
        mailSettings: { sandboxMode: { enable: true } },
      });
      t.equal(response.statusCode, 200);
      t.equal((await list('sandbox@example.net')).body.data.length, 0);
    });

    t.test("errors come back in SendGrid's shape, raised as the SDK's ResponseError", async (t) => {
      const invalid = (await mail.send({ from: 'app@acme.example', to: 'x@example.net', text: 'no subject' }).catch((e: unknown) => e)) as {
        code: number;
        response: { body: { errors: { message: string; field: string | null }[] } };
      };
      t.equal(invalid.code, 400);
      t.match(invalid.response.body.errors, [{ field: 'personalizations.0.subject', message: /subject is required/ }]);
      const missingTemplate = (await mail
        .send({ from: 'app@acme.example', to: 'x@example.net', templateId: 'd-nope' })
        .catch((e: unknown) => e)) as { code: number; response: { body: { errors: { field: string }[] } } };
      t.equal(missingTemplate.code, 400);
      t.match(missingTemplate.response.body.errors, [{ field: 'template' }]);
      t.equal((await list('x@example.net')).body.data.length, 0, 'nothing stored');
      const denied = (await client('sk_live_nope')
        .send({ from: 'app@acme.example', to: 'x@example.net', subject: 's', text: 't' })
        .catch((e: unknown) => e)) as { code: number; response: { body: { errors: { message: string }[] } } };
      t.equal(denied.code, 401);
      t.match(denied.response.body.errors, [{ message: /authorization grant is invalid/ }]);
      const readOnly = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read')).json.secret as string;
      const scoped = (await client(readOnly)
        .send({ from: 'app@acme.example', to: 'x@example.net', subject: 's', text: 't' })
        .catch((e: unknown) => e)) as { code: number; response: { body: { errors: { message: string }[] } } };
      t.equal(scoped.code, 403, 'a key without the send scope cannot send');
      t.match(scoped.response.body.errors, [{ message: /lacks the send scope/ }]);
      const unsupported = await fetch(`${d.url}/compat/sendgrid/v3/marketing/contacts`, {
        headers: { authorization: `Bearer ${ws.live}` },
      });
      t.equal(unsupported.status, 404);
      t.match(await unsupported.json(), { errors: [{ message: /not supported.*POST \/v3\/mail\/send/ }] });
    });
  });
}
