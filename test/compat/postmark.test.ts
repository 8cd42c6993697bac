// Postmark's own SDK (`postmark` from npm), unmodified, with its requestHost pointed at
// /compat/postmark of a daemon started here and a Postern key as the server token: every
// supported call succeeds, the messages reach a loopback MX whole and DKIM-signed (Python's email
// package and dkimpy), and errors come back in Postmark's shape, so the SDK throws its own classes.
import t from 'tap';
import * as postmark from 'postmark';
import { testDatabases } from '../helpers/databases.js';
import { vendorSetup } from '../helpers/vendor-sdk.js';

const TEXT = 'Hello from Postmark’s SDK.\n';
const HTML = '<p>Hello from <b>Postmark’s SDK</b>.</p>';
const PDF = Buffer.from('%PDF-1.4 not really').toString('base64');

for (const db of testDatabases()) {
  t.test(`the postmark SDK against /compat/postmark on ${db}`, async (t) => {
    const { d, ws, message, template, copyFor, deliveredWhole } = await vendorSetup(t, db);
    const host = `${new URL(d.url).host}/compat/postmark`;
    const client = new postmark.ServerClient(ws.live, { requestHost: host, useHttps: false });

    t.test('sendEmail: delivered whole and signed, one message per recipient', async (t) => {
      const r = await client.sendEmail({
        From: 'Acme App <app@acme.example>',
        To: 'ann@example.net, bob@example.net',
        Subject: 'Your invoice',
        TextBody: TEXT,
        HtmlBody: HTML,
        ReplyTo: 'billing@acme.example',
        Tag: 'invoice',
        Metadata: { order: '42' },
        Attachments: [{ Name: 'invoice.pdf', Content: PDF, ContentType: 'application/pdf', ContentID: null }],
      });
      t.match(r, { ErrorCode: 0, Message: 'OK', To: 'ann@example.net, bob@example.net', MessageID: /^msg_/ });
      t.match((await message(r.MessageID)).body, { recipient: 'ann@example.net', metadata: { tag: 'invoice', order: '42' } });
      await deliveredWhole(t, ['ann@example.net', 'bob@example.net'], {
        replyTo: 'billing@acme.example',
        subject: 'Your invoice',
        text: TEXT,
        html: HTML,
        attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', content: PDF }],
      });
    });

    t.test('sendEmailWithTemplate: TemplateAlias is the slug, TemplateModel the vars', async (t) => {
      await template('welcome', 'Welcome, {{name}}', 'Hello {{name}}');
      const r = await client.sendEmailWithTemplate({
        From: 'app@acme.example',
        To: 'carol@example.net',
        TemplateAlias: 'welcome',
        TemplateModel: { name: 'Carol' },
      });
      t.match(r, { ErrorCode: 0, MessageID: /^msg_/ });
      const copy = await copyFor('carol@example.net');
      t.match(copy.raw.toString('utf8'), /Subject: Welcome, Carol/);
      const missing = await client
        .sendEmailWithTemplate({ From: 'app@acme.example', To: 'x@example.net', TemplateAlias: 'nope', TemplateModel: {} })
        .catch((e: unknown) => e);
      t.type(missing, postmark.Errors.ApiInputError);
      t.match(missing, { code: 1101, statusCode: 422, message: /no template nope/ });
    });

    t.test('sendEmailBatch: each message answered on its own', async (t) => {
      const r = await client.sendEmailBatch([
        { From: 'app@acme.example', To: 'b1@example.net', Subject: 'One', TextBody: 'one' },
        { From: 'app@acme.example', To: 'not an address', Subject: 'Two', TextBody: 'two' },
        { From: 'app@acme.example', To: 'b3@example.net', Subject: 'Three', HtmlBody: '<p>three</p>' },
      ]);
      t.equal(r.length, 3);
      t.match(r[0], { ErrorCode: 0, MessageID: /^msg_/ });
      t.match(r[1], { ErrorCode: 300, Message: /To/ });
      t.match(r[2], { ErrorCode: 0, MessageID: /^msg_/ });
      const twice = await client.sendEmailBatchWithTemplates([
        { From: 'app@acme.example', To: 'b4@example.net', TemplateAlias: 'welcome', TemplateModel: { name: 'Dee' } },
      ]);
      t.match(twice, [{ ErrorCode: 0 }]);
    });

    t.test("errors come back in Postmark's shape, as the SDK's own error classes", async (t) => {
      const invalid = await client
        .sendEmail({ From: 'app@acme.example', To: 'x@example.net', Subject: 'No body' })
        .catch((e: unknown) => e);
      t.type(invalid, postmark.Errors.InvalidEmailRequestError);
      t.match(invalid, { code: 300, statusCode: 422, message: /HtmlBody or TextBody/ });
      const wrong = new postmark.ServerClient('sk_live_nope', { requestHost: host, useHttps: false });
      const denied = await wrong
        .sendEmail({ From: 'app@acme.example', To: 'x@example.net', Subject: 's', TextBody: 't' })
        .catch((e: unknown) => e);
      t.type(denied, postmark.Errors.InvalidAPIKeyError);
      const readOnly = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read')).json.secret as string;
      const scoped = await new postmark.ServerClient(readOnly, { requestHost: host, useHttps: false })
        .sendEmail({ From: 'app@acme.example', To: 'x@example.net', Subject: 's', TextBody: 't' })
        .catch((e: unknown) => e);
      t.type(scoped, postmark.Errors.InvalidAPIKeyError, 'a key without the send scope cannot send');
      t.match(scoped, { message: /lacks the send scope/ });
      const unsupported = await client.getServer().catch((e: unknown) => e);
      t.type(unsupported, postmark.Errors.PostmarkError);
      t.match(unsupported, { statusCode: 404, message: /not supported.*POST \/email/ });
    });
  });
}
