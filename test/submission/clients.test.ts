// SMTP submission with real clients, none of them ours: swaks (AUTH PLAIN and LOGIN, over STARTTLS
// on the submission port and implicit TLS on the submissions port), Python's smtplib, nodemailer's
// SMTP transport and msmtp. Each submits a message with text, html, an attachment and a Bcc, to
// several recipients, one of them with a UTF-8 local part (SMTPUTF8). The messages are read back
// through GET /v1/messages (one per recipient, metadata from X-Postern-Metadata), and each
// delivered copy at the loopback MX is checked by tools we did not write (test/helpers/wire-check.ts:
// Python's email package and dkimpy): whole, DKIM-signed by the workspace's domain, no Bcc and no
// X-Postern-* header; and each reaches a webhook endpoint as message.delivered, signed. A test key's submissions are test-mode messages that reach no MX.
import t, { type Test } from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { freePort } from '../helpers/ports.js';
import { addVerifiedDomain, startRemoteMx, type Received } from '../helpers/smtp-sink.js';
import { compose, msmtp, nodemailerSend, smtplib, swaks, type Submitted } from '../helpers/submission-clients.js';
import { until } from '../helpers/until.js';
import { startReceiver, verify } from '../helpers/webhook-receiver.js';
import { startWireChecker } from '../helpers/wire-check.js';

const TEXT = 'Hello from the app,\nünïcode and all.\n';
const HTML = '<p>Hello from the app, <b>ünïcode</b> and all.</p>';
const ATTACHMENT = { filename: 'report.csv', contentType: 'text/csv', content: Buffer.from('a,b\n1,2\n').toString('base64') };

for (const db of testDatabases()) {
  t.test(`real clients submit mail on ${db}`, async (t) => {
    const checker = startWireChecker(t);
    const mx = await startRemoteMx(t, { domains: ['example.net'] });
    const d = await bootDaemon(t, {
      db,
      env: {
        ...mx.env,
        POSTERN_SUBMISSION_ENABLED: 'true',
        POSTERN_SUBMISSION_TLS_PORT: String(await freePort()),
        POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const hooks = await startReceiver();
    t.teardown(() => hooks.close());
    const endpoint = await d.request('POST', '/v1/webhooks', { key: ws.live, body: { url: hooks.url, events: ['message.delivered'] } });
    t.equal(endpoint.status, 201);
    const secret = endpoint.body.secret as string;
    const txt = await addVerifiedDomain(d.app, ws.id, 'acme.example');
    mx.dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: txt }]);
    checker.publish('postern._domainkey.acme.example', txt);
    const port = d.submissionPort!;
    const tlsPort = d.submissionTlsPort!;

    /** The message a client submits: text, html, an attachment, a Bcc header, X-Postern-Metadata naming the client. */
    const message = async (client: string, to: string[]) => {
      const raw = await compose({
        from: { name: 'Acme App', address: 'app@acme.example' },
        to,
        subject: `Report from ${client}`,
        text: TEXT,
        html: HTML,
        attachments: [
          { filename: ATTACHMENT.filename, contentType: ATTACHMENT.contentType, content: Buffer.from(ATTACHMENT.content, 'base64') },
        ],
        messageId: `<${client}@acme.example>`,
        headers: { 'X-Postern-Metadata': JSON.stringify({ client }) },
      });
      // The Bcc a mail client leaves in what it submits: only the envelope may carry it on.
      return Buffer.concat([Buffer.from(`Bcc: hidden.${client}@example.net\r\n`), raw]);
    };
    const recipients = (client: string) => [`one.${client}@example.net`, `zoë.${client}@example.net`];
    const submitted = async (client: string, user = 'apikey', key = ws.live): Promise<Submitted> => ({
      user,
      password: key,
      from: 'app@acme.example',
      to: [...recipients(client), `hidden.${client}@example.net`],
      raw: await message(client, recipients(client)),
    });

    /** The client's messages through the API once all are delivered, and their copies at the MX, checked whole. */
    const delivered = async (t: Test, client: string) => {
      const list = await until(`${client}'s three messages delivered`, async () => {
        const r = await d.request('GET', `/v1/messages?metadata[client]=${client}`, { key: ws.live });
        const data = r.body.data as { status: string; recipient: string; publicId: string }[];
        return data.length === 3 && data.every((m) => m.status === 'delivered') && data;
      });
      t.same(
        list.map((m) => m.recipient).sort(),
        [`hidden.${client}@example.net`, ...recipients(client)].sort(),
        'one message per recipient, the Bcc too',
      );
      for (const m of list) {
        const copy = await until(`the copy for ${m.recipient} at the MX`, () =>
          mx.sink.received.find((r: Received) => r.to.includes(m.recipient)),
        );
        const problems = await checker.check(copy.raw, {
          from: { address: 'app@acme.example', name: 'Acme App' },
          to: [m.recipient],
          cc: [],
          subject: `Report from ${client}`,
          text: TEXT,
          html: HTML,
          attachments: [ATTACHMENT],
          eightBit: true,
          dkimDomain: 'acme.example',
        });
        t.same(problems, [], `the copy for ${m.recipient} is whole and signed by acme.example`);
        t.notMatch(copy.raw.toString('utf8'), /^(bcc|x-postern-[a-z-]+):/im, 'no Bcc and no X-Postern-* header travels');
        t.equal(copy.smtpUtf8, /[^\x00-\x7f]/.test(m.recipient), 'SMTPUTF8 exactly for the UTF-8 recipient');
        const hook = await until(`message.delivered of ${m.publicId} at the webhook endpoint`, () =>
          hooks.requests.find((r) => r.json?.type === 'message.delivered' && JSON.stringify(r.json.data).includes(m.publicId)),
        );
        t.ok(verify(secret, hook), 'the webhook is signed');
      }
    };

    for (const [name, opts] of [
      ['swaks-plain-starttls', { tls: 'starttls', auth: 'PLAIN', port }],
      ['swaks-login-starttls', { tls: 'starttls', auth: 'LOGIN', port }],
      ['swaks-plain-implicit', { tls: 'implicit', auth: 'PLAIN', port: tlsPort }],
      ['swaks-login-implicit', { tls: 'implicit', auth: 'LOGIN', port: tlsPort }],
    ] as const) {
      t.test(`swaks, AUTH ${opts.auth} over ${opts.tls === 'starttls' ? 'STARTTLS on the submission port' : 'implicit TLS'}`, async (t) => {
        const r = await swaks(opts.port, await submitted(name, name.includes('login') ? 'acme' : 'apikey'), {
          tls: opts.tls,
          auth: opts.auth,
        });
        t.equal(r.code, 0, `swaks succeeded: ${r.stderr}${r.stdout.slice(-1500)}`);
        t.match(r.stdout, /<~ {2}250 2\.0\.0 Ok: queued as msg_\w+ msg_\w+ msg_\w+/, 'one id per recipient, after DATA');
        t.match(r.stdout, /250-SIZE \d+|250 SIZE \d+/, 'SIZE is advertised');
        t.match(r.stdout, /250-PIPELINING/);
        t.match(r.stdout, /250-8BITMIME/);
        t.match(r.stdout, /250-SMTPUTF8/);
        await delivered(t, name);
      });
    }

    t.test('Python smtplib: STARTTLS, then implicit TLS', async (t) => {
      for (const [name, tls, p] of [
        ['smtplib-starttls', 'starttls', port],
        ['smtplib-implicit', 'implicit', tlsPort],
      ] as const) {
        const r = await smtplib(p, await submitted(name), { tls });
        t.match(r.login, [235], `${name}: AUTH accepted`);
        t.same(
          r.rcpt.map(([c]) => c),
          [250, 250, 250],
          `${name}: every recipient accepted`,
        );
        t.match(r.data, [250, /^2\.0\.0 Ok: queued as (msg_\w+ ?){3}$/], `${name}: queued`);
        await delivered(t, name);
      }
    });

    t.test("nodemailer's SMTP transport, composing its own message", async (t) => {
      for (const [name, secure, p] of [
        ['nodemailer-starttls', false, port],
        ['nodemailer-implicit', true, tlsPort],
      ] as const) {
        const info = await nodemailerSend(
          p,
          { user: 'apikey', pass: ws.live },
          {
            from: { name: 'Acme App', address: 'app@acme.example' },
            to: recipients(name),
            bcc: `hidden.${name}@example.net`,
            subject: `Report from ${name}`,
            text: TEXT,
            html: HTML,
            attachments: [
              { filename: ATTACHMENT.filename, contentType: ATTACHMENT.contentType, content: Buffer.from(ATTACHMENT.content, 'base64') },
            ],
            headers: { 'X-Postern-Metadata': JSON.stringify({ client: name }) },
          },
          { secure },
        );
        t.match(info.response, /^250 2\.0\.0 Ok: queued as (msg_\w+ ?){3}$/, `${name}: queued`);
        t.equal(info.rejected.length, 0);
        await delivered(t, name);
      }
    });

    t.test('msmtp, as cron and PHP call it', async (t) => {
      for (const [name, tls, p] of [
        ['msmtp-starttls', 'starttls', port],
        ['msmtp-implicit', 'implicit', tlsPort],
      ] as const) {
        const r = await msmtp(p, await submitted(name), { tls });
        t.equal(r.code, 0, `${name}: msmtp succeeded: ${r.stderr}`);
        await delivered(t, name);
      }
    });

    t.test('a test key submits test-mode messages that reach no MX', async (t) => {
      const before = mx.sink.received.length;
      const r = await smtplib(port, await submitted('test-mode', 'acme', ws.test), { tls: 'starttls' });
      t.match(r.data, [250]);
      const list = await until('the test-mode messages delivered by the test channel', async () => {
        const res = await d.request('GET', '/v1/messages?metadata[client]=test-mode', { key: ws.test });
        const data = res.body.data as { status: string; livemode: boolean }[];
        return data.length === 3 && data.every((m) => m.status === 'delivered') && data;
      });
      t.ok(
        list.every((m) => !m.livemode),
        'test mode',
      );
      t.equal(
        (await d.request('GET', '/v1/messages?metadata[client]=test-mode', { key: ws.live })).body.data.length,
        0,
        'not among live messages',
      );
      t.equal(mx.sink.received.length, before, 'nothing reached the MX');
    });
  });
}
