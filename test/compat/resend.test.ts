// Resend's own SDK (`resend` from npm), unmodified, pointed at /compat/resend of a daemon started
// here with a Postern key: every supported call succeeds, the messages reach a loopback MX whole
// and DKIM-signed (checked by Python's email package and dkimpy), and errors come back in Resend's
// shape, which the SDK hands back as its `error`.
import t from 'tap';
import { Resend } from 'resend';
import { testDatabases } from '../helpers/databases.js';
import { vendorSetup } from '../helpers/vendor-sdk.js';

const TEXT = 'Hello from Resend’s SDK.\n';
const HTML = '<p>Hello from <b>Resend’s SDK</b>.</p>';
const CSV = Buffer.from('a,b\n1,2\n').toString('base64');

for (const db of testDatabases()) {
  t.test(`the resend SDK against /compat/resend on ${db}`, async (t) => {
    const { d, ws, message, deliveredWhole } = await vendorSetup(t, db);
    const resend = new Resend(ws.live, { baseUrl: `${d.url}/compat/resend` });

    t.test('emails.send: one message per recipient, delivered whole and signed', async (t) => {
      const { data, error } = await resend.emails.send({
        from: 'Acme App <app@acme.example>',
        to: ['ann@example.net', 'bob@example.net'],
        subject: 'Your report',
        text: TEXT,
        html: HTML,
        replyTo: 'help@acme.example',
        attachments: [{ filename: 'report.csv', content: CSV, contentType: 'text/csv' }],
        tags: [{ name: 'kind', value: 'report' }],
      });
      t.equal(error, null);
      t.match(data, { id: /^msg_/ });
      const first = await message(data!.id);
      t.match(first.body, {
        recipient: 'ann@example.net',
        metadata: { kind: 'report' },
        fromOverride: 'app@acme.example',
        fromNameOverride: 'Acme App',
      });
      await deliveredWhole(t, ['ann@example.net', 'bob@example.net'], {
        replyTo: 'help@acme.example',
        subject: 'Your report',
        text: TEXT,
        html: HTML,
        attachments: [{ filename: 'report.csv', contentType: 'text/csv', content: CSV }],
      });
      const got = await resend.emails.get(data!.id);
      t.equal(got.error, null);
      t.match(got.data, {
        object: 'email',
        id: data!.id,
        to: ['ann@example.net'],
        subject: 'Your report',
        from: 'Acme App <app@acme.example>',
      });
    });

    t.test('an Idempotency-Key answers a repeat with the same id', async (t) => {
      const body = { from: 'app@acme.example', to: 'idem@example.net', subject: 'Once', text: 'once' };
      const a = await resend.emails.send(body, { idempotencyKey: 'resend-1' });
      const b = await resend.emails.send(body, { idempotencyKey: 'resend-1' });
      t.equal(a.error, null);
      t.equal(b.data?.id, a.data?.id);
      const list = await d.request('GET', '/v1/messages?q=idem@example.net', { key: ws.live });
      t.equal(list.body.data.length, 1, 'one message');
    });

    t.test('batch.send: strict is all or none; permissive answers each', async (t) => {
      const ok = await resend.batch.send([
        { from: 'app@acme.example', to: 'b1@example.net', subject: 'One', text: 'one' },
        { from: 'app@acme.example', to: 'b2@example.net', subject: 'Two', html: '<p>two</p>' },
      ]);
      t.equal(ok.error, null);
      t.equal(ok.data?.data.length, 2);
      const bad = await resend.batch.send([
        { from: 'app@acme.example', to: 'b3@example.net', subject: 'Three', text: 'three' },
        { from: 'app@acme.example', to: 'not an address', subject: 'Four', text: 'four' },
      ]);
      t.equal(bad.data, null);
      t.match(bad.error, { name: 'validation_error', statusCode: 422, message: /1\.to/ });
      const none = await d.request('GET', '/v1/messages?q=b3@example.net', { key: ws.live });
      t.equal(none.body.data.length, 0, 'strict: nothing of the batch stored');
      const some = await resend.batch.send(
        [
          { from: 'app@acme.example', to: 'b5@example.net', subject: 'Five', text: 'five' },
          { from: 'app@acme.example', to: 'b6@example.net', subject: 'Six' } as never,
        ],
        { batchValidation: 'permissive' },
      );
      t.equal(some.error, null);
      t.equal(some.data?.data.length, 1);
      t.match((some.data as unknown as { errors: unknown[] }).errors, [{ index: 1, message: /html/ }]);
    });

    t.test('a scheduled email can be canceled', async (t) => {
      const at = new Date(d.clock.now().getTime() + 3600_000).toISOString();
      const s = await resend.emails.send({
        from: 'app@acme.example',
        to: 'later@example.net',
        subject: 'Later',
        text: 'later',
        scheduledAt: at,
      });
      t.equal(s.error, null);
      t.equal((await message(s.data!.id)).body.status, 'scheduled');
      const c = await resend.emails.cancel(s.data!.id);
      t.same(c.data, { object: 'email', id: s.data!.id });
      t.equal((await message(s.data!.id)).body.status, 'canceled');
      const again = await resend.emails.cancel(s.data!.id);
      t.match(again.error, { name: 'validation_error', statusCode: 422 });
    });

    t.test("errors come back in Resend's shape", async (t) => {
      const missing = await resend.emails.send({ from: 'app@acme.example', to: 'x@example.net', text: 'no subject' } as never);
      t.match(missing.error, { statusCode: 422, name: 'validation_error', message: /subject/ });
      const wrong = await new Resend('sk_live_nope', { baseUrl: `${d.url}/compat/resend` }).emails.send({
        from: 'app@acme.example',
        to: 'x@example.net',
        subject: 's',
        text: 't',
      });
      t.match(wrong.error, { statusCode: 403, name: 'invalid_api_key' });
      const unknown = await resend.emails.get('msg_nope');
      t.match(unknown.error, { statusCode: 404, name: 'not_found' });
      const unsupported = await resend.domains.list();
      t.match(unsupported.error, { statusCode: 404, name: 'not_found', message: /not supported.*POST \/emails/ });
      const readOnly = (await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read')).json.secret as string;
      const scoped = await new Resend(readOnly, { baseUrl: `${d.url}/compat/resend` }).emails.send({
        from: 'app@acme.example',
        to: 'x@example.net',
        subject: 's',
        text: 't',
      });
      t.match(scoped.error, { statusCode: 401, name: 'restricted_api_key' });
    });
  });
}
