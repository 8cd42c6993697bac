// Protocol-level policy, spoken over raw sockets: never an open relay, SIZE advertised and
// enforced, bare LF/CR smuggling refused, no AUTH, STARTTLS offered, recipient limit, bounces.
import t from 'tap';
import { createAddress, RawSmtp, sendRaw, setup, simpleMail, transport } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`SMTP policy (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_MAX_SIZE_BYTES: '20000', POSTERN_SMTP_MAX_RECIPIENTS: '3' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    const count = async () => (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages.length;

    t.test('greeting and EHLO', async (t) => {
      const c = await RawSmtp.connect(env.d.smtpPort);
      const ehlo = await c.cmd('EHLO client.example.org');
      t.match(ehlo, /^250-mx\.postern\.test/);
      t.match(ehlo, /SIZE 20000/);
      t.match(ehlo, /STARTTLS/);
      t.notMatch(ehlo, /AUTH/);
      t.match(await c.cmd('AUTH PLAIN AGFAYg=='), /^5\d\d /);
      c.close();
    });

    t.test('never an open relay', async (t) => {
      const c = await RawSmtp.connect(env.d.smtpPort);
      await c.cmd('EHLO client.example.org');
      t.match(await c.cmd('MAIL FROM:<spammer@example.org>'), /^250 /);
      t.match(await c.cmd('RCPT TO:<victim@gmail.com>'), /^550 5\.7\.1 /);
      t.match(await c.cmd('RCPT TO:<x@nosuchworkspace.in.postern.test>'), /^550 5\.7\.1 /);
      t.match(await c.cmd('RCPT TO:<x@in.postern.test>'), /^550 5\.7\.1 /);
      t.match(await c.cmd('RCPT TO:<x@mx.postern.test>'), /^550 5\.7\.1 /);
      t.match(await c.cmd('RCPT TO:<victim@gmail.com@acme.in.postern.test>'), /^5\d\d /, 'source routes and odd addresses are refused');
      t.match(await c.cmd('DATA'), /^503 /, 'no valid recipients, no DATA');
      c.close();
    });

    t.test('recipient limit', async (t) => {
      const c = await RawSmtp.connect(env.d.smtpPort);
      await c.cmd('EHLO client.example.org');
      await c.cmd('MAIL FROM:<a@example.org>');
      for (const n of [1, 2, 3]) t.match(await c.cmd(`RCPT TO:<u${n}@${env.shared}>`), /^250 /);
      t.match(await c.cmd(`RCPT TO:<u4@${env.shared}>`), /^452 /);
      c.close();
    });

    t.test('size limit: declared and actual', async (t) => {
      const c = await RawSmtp.connect(env.d.smtpPort);
      await c.cmd('EHLO client.example.org');
      t.match(await c.cmd('MAIL FROM:<a@example.org> SIZE=30000'), /^552 /);
      c.close();
      const big = simpleMail({ to: a.address, body: 'x'.repeat(76).concat('\r\n').repeat(400) });
      await t.rejects(sendRaw(env.d.smtpPort, { from: 'a@example.org', to: [a.address] }, big), { responseCode: 552 } as never);
      t.equal(await count(), 0);
    });

    t.test('bare LF and bare CR are refused: no message is split in two', async (t) => {
      for (const smuggle of ['\n.\n', '\r\n.\n', '\n.\r\n', '\r.\r\n', '\r\n.\r']) {
        const c = await RawSmtp.connect(env.d.smtpPort);
        await c.cmd('EHLO client.example.org');
        await c.cmd('MAIL FROM:<a@example.org>');
        await c.cmd(`RCPT TO:<${a.address}>`);
        t.match(await c.cmd('DATA'), /^354 /);
        c.write(
          `Subject: first\r\n\r\nhello${smuggle}MAIL FROM:<admin@example.org>\r\nRCPT TO:<${a.address}>\r\nDATA\r\nSubject: smuggled\r\n\r\nevil\r\n.\r\n`,
        );
        t.match(await c.reply(), /^554 5\.6\.0 /, JSON.stringify(smuggle));
        c.close();
      }
      t.equal(await count(), 0);
    });

    t.test('STARTTLS then delivery', async (t) => {
      const info = await transport(env.d.smtpPort, { requireTLS: true }).sendMail({
        from: 'a@example.org',
        to: a.address,
        subject: 'over TLS',
        text: 'hi',
      });
      t.match(info.response, /^250 /);
      t.equal(await count(), 1);
    });

    t.test('bounce domain: accepted and handed to the bounce handler', async (t) => {
      const reply = await sendRaw(
        env.d.smtpPort,
        { from: '', to: ['bounces+msg_abc@bounces.mx.postern.test'] },
        simpleMail({ from: 'MAILER-DAEMON@remote.example', to: 'bounces+msg_abc@bounces.mx.postern.test', subject: 'Undelivered' }),
      );
      t.match(reply, /^250 /);
      // The DSN processor (src/outbound/bounces.ts) took it: msg_abc names no message, so it is dropped.
      t.ok(
        env.d.logs.some((l) => /names no message|without a delivery-status part/.test(l)),
        'handed to the bounce handler',
      );
      t.equal(await count(), 1, 'bounces are not stored as received mail');
    });
  });

  t.test(`PROXY protocol: the client address comes from the header (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_PROXY_PROTOCOL: 'true' } });
    env.dns.set('sender.example', [{ type: 'TXT', data: 'v=spf1 ip4:203.0.113.7 -all' }]);
    const a = await createAddress(env, { localPart: 'inbox' });
    const net = await import('node:net');
    // The PROXY header must precede everything, so this dialogue is spoken on a plain socket.
    const dialogue = [
      'PROXY TCP4 203.0.113.7 127.0.0.1 40000 25',
      'EHLO client.example.org',
      'MAIL FROM:<alice@sender.example>',
      `RCPT TO:<${a.address}>`,
      'DATA',
    ];
    const s = net.connect(env.d.smtpPort, '127.0.0.1');
    let buf = '';
    s.setEncoding('utf8');
    const waitFor = (re: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (re.test(buf)) {
            s.off('data', onData);
            resolve();
          }
        };
        const onData = (d: string) => {
          buf += d;
          check();
        };
        s.on('data', onData);
        s.once('close', () => reject(new Error(`closed: ${buf}`)));
        check();
      });
    await new Promise((resolve) => s.once('connect', resolve));
    s.write(dialogue[0] + '\r\n');
    await waitFor(/^220 /m);
    for (const [line, re] of [
      [dialogue[1], /^250 /m],
      [dialogue[2], /^250 .*\r\n$/],
      [dialogue[3], /^250 .*\r\n$/],
      [dialogue[4], /^354 /m],
    ] as const) {
      buf = '';
      s.write(line + '\r\n');
      await waitFor(re);
    }
    buf = '';
    s.write(simpleMail({ from: 'alice@sender.example', to: a.address, subject: 'Proxied' }).replace(/\r\n$/, '') + '\r\n.\r\n');
    await waitFor(/^250 /m);
    s.destroy();
    const list = (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages;
    const detail = (await env.d.request('GET', `/v1/inbound/messages/${list[0].id}`, { key: env.ws.live })).body;
    t.equal(detail.verdicts.spf.result, 'pass', 'SPF evaluated for the proxied client IP');
    t.match(detail.verdicts.spf.details, /203\.0\.113\.7/);
  });

  t.test(`a connection is cut after smtp.maxConnectionMs whatever it does (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_MAX_CONNECTION_TIME: '1000ms' } });
    const started = Date.now();
    const c = await RawSmtp.connect(env.d.smtpPort);
    await c.cmd('EHLO client.example.org');
    await c.waitClose();
    const took = Date.now() - started;
    t.ok(took >= 900 && took < 10_000, `closed by the server after ${took} ms`);
  });
}
