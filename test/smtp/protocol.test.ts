// What RFC 5321 and its extensions ask of a receiving MTA, over real sockets: one "ESMTP" in the
// banner, ENHANCEDSTATUSCODES advertised and every reply carrying exactly one code, 552 5.3.4 for
// oversize mail whether declared or sent, local parts over 64 octets refused, <postmaster> without
// a domain accepted, and a Received header on every message accepted.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { createAddress, RawSmtp, sendRaw, setup, simpleMail, transport } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

const rfc5322Date = (d: Date) => d.toUTCString().replace('GMT', '+0000');
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

for (const db of testDatabases()) {
  t.test(`SMTP protocol (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_MAX_SIZE_BYTES: '20000' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    const auth = { authorization: `Bearer ${env.ws.live}` };
    const storedSource = async (reply: string) => {
      const id = /rcv_\w+/.exec(reply)![0];
      const detail = (await env.d.request('GET', `/v1/inbound/messages/${id}`, { key: env.ws.live })).body;
      return (await fetch(detail.rawUrl, { headers: auth })).text();
    };

    t.test('one ESMTP in the banner; ENHANCEDSTATUSCODES advertised and used once per reply', async (t) => {
      const c = await RawSmtp.connect(env.d.smtpPort);
      t.equal(c.greeting, '220 mx.postern.test ESMTP Postern');
      t.equal(c.greeting.match(/ESMTP/g)?.length, 1);
      const ehlo = await c.cmd('EHLO client.example.org');
      t.match(ehlo, /^250-ENHANCEDSTATUSCODES$/m);
      t.match(await c.cmd('MAIL FROM:<a@example.org>'), /^250 2\.1\.0 /);
      const denied = await c.cmd('RCPT TO:<victim@gmail.com>');
      t.match(denied, /^550 5\.7\.1 <victim@gmail\.com>: relay access denied$/);
      t.match(await c.cmd(`RCPT TO:<${a.address}>`), /^250 2\.1\.5 /);
      t.match(await c.cmd('XYZZY'), /^500 5\.5\.2 /);
      c.close();
    });

    t.test('oversize mail is 552 5.3.4, declared at MAIL FROM or sent in DATA', async (t) => {
      const c = await RawSmtp.connect(env.d.smtpPort);
      await c.cmd('EHLO client.example.org');
      t.match(await c.cmd('MAIL FROM:<a@example.org> SIZE=30000'), /^552 5\.3\.4 /);
      t.match(await c.cmd('MAIL FROM:<a@example.org>'), /^250 /);
      await c.cmd(`RCPT TO:<${a.address}>`);
      t.match(await c.cmd('DATA'), /^354 /);
      c.write(simpleMail({ to: a.address, body: 'x'.repeat(76).concat('\r\n').repeat(400) }) + '.\r\n');
      t.match(await c.reply(), /^552 5\.3\.4 /);
      c.close();
    });

    t.test('a local part over 64 octets is refused with 501 5.1.3', async (t) => {
      const c = await RawSmtp.connect(env.d.smtpPort);
      await c.cmd('EHLO client.example.org');
      await c.cmd('MAIL FROM:<a@example.org> SMTPUTF8');
      t.match(await c.cmd(`RCPT TO:<${'a'.repeat(65)}@${env.shared}>`), /^501 5\.1\.3 .*64 octets/);
      t.match(await c.cmd(`RCPT TO:<${'é'.repeat(33)}@${env.shared}>`), /^501 5\.1\.3 /, '66 octets in 33 characters');
      t.match(await c.cmd(`RCPT TO:<${'a'.repeat(64)}@${env.shared}>`), /^250 /, '64 octets is fine');
      t.match(await c.cmd(`RCPT TO:<${'a'.repeat(65)}@gmail.com>`), /^501 5\.1\.3 /, 'before any routing');
      c.close();
    });

    t.test('a Received header on every message accepted', async (t) => {
      const plain = await transport(env.d.smtpPort, { ignoreTLS: true }).sendMail({
        envelope: { from: 'a@example.org', to: [a.address] },
        raw: simpleMail({ to: a.address, subject: 'Traced' }),
      });
      const one = plain.response;
      const source = await storedSource(one);
      const received = new RegExp(
        '\\r\\nReceived: from client\\.example\\.org \\(\\[127\\.0\\.0\\.1\\]\\)\\r\\n' +
          '\\tby mx\\.postern\\.test \\(Postern\\) with ESMTP id [a-z0-9]+-1\\r\\n' +
          `\\tfor <${escape(a.address)}>; ${escape(rfc5322Date(env.d.clock.now()))}\\r\\nFrom: Alice`,
      );
      t.match(source, received, 'below Authentication-Results, right above the message');
      t.match(source, /^Received-SPF: [^\r\n]+\r\nAuthentication-Results: /);

      const tls = await transport(env.d.smtpPort, { requireTLS: true }).sendMail({
        from: 'a@example.org',
        to: a.address,
        subject: 'TLS',
        text: 'hi',
      });
      t.match(await storedSource(tls.response), /\r\n\tby mx\.postern\.test \(Postern\) with ESMTPS id /);

      const other = await createAddress(env, { localPart: 'other' });
      const two = await sendRaw(
        env.d.smtpPort,
        { from: 'a@example.org', to: [a.address, other.address] },
        simpleMail({ to: a.address, subject: 'Two' }),
      );
      const shared = await storedSource(two);
      t.match(shared, /\r\n\tby mx\.postern\.test \(Postern\) with ESMTPS id [a-z0-9]+-1; /, 'two recipients: no for clause');
      t.notMatch(shared, /\tfor </);
    });

    t.test('RCPT TO:<postmaster> without a domain: accepted, into the postmaster mailbox', async (t) => {
      const c = await RawSmtp.connect(env.d.smtpPort);
      await c.cmd('EHLO client.example.org');
      await c.cmd('MAIL FROM:<reporter@example.org>');
      t.match(await c.cmd('RCPT TO:<Postmaster>'), /^250 /);
      t.match(await c.cmd('DATA'), /^354 /);
      const body = simpleMail({ from: 'reporter@example.org', to: 'postmaster', subject: 'Your server' });
      t.match(await c.cmd(body + '.'), /^250 2\.0\.0 Ok: stored$/);
      c.close();
      const dir = path.join(env.d.dataDir, 'postmaster');
      const files = readdirSync(path.join(dir, 'new'));
      t.equal(files.length, 1, 'one message in the Maildir');
      t.same(readdirSync(path.join(dir, 'tmp')), [], 'nothing left in tmp/');
      const mail = readFileSync(path.join(dir, 'new', files[0]), 'latin1');
      t.match(
        mail,
        /^Received: from client\.example\.org \(\[127\.0\.0\.1\]\)\r\n\tby mx\.postern\.test \(Postern\) with ESMTP id \S+\r\n\tfor <Postmaster>; /,
      );
      t.ok(mail.endsWith(body), 'the message follows byte for byte');
      t.same(
        (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages.filter(
          (m: { subject: string }) => m.subject === 'Your server',
        ),
        [],
      );
    });
  });

  t.test(`RCPT TO:<postmaster> goes to smtp.postmasterAddress when it is set (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_POSTMASTER_ADDRESS: 'ops@acme.in.postern.test' } });
    const ops = await createAddress(env, { localPart: 'ops' });
    const c = await RawSmtp.connect(env.d.smtpPort);
    await c.cmd('EHLO client.example.org');
    await c.cmd('MAIL FROM:<reporter@example.org>');
    t.match(await c.cmd('RCPT TO:<postmaster>'), /^250 /);
    await c.cmd('DATA');
    const reply = await c.cmd(simpleMail({ to: 'postmaster', subject: 'For the operator' }) + '.');
    c.close();
    t.match(reply, /^250 2\.0\.0 Ok: stored as rcv_/);
    const [m] = (await env.d.request('GET', `/v1/inbound/messages?address=${ops.id}`, { key: env.ws.live })).body.messages;
    t.equal(m?.subject, 'For the operator');
    const detail = (await env.d.request('GET', `/v1/inbound/messages/${m.id}`, { key: env.ws.live })).body;
    t.same(detail.envelope.to, ['postmaster'], 'the envelope shows what the sender wrote');
    t.equal(detail.address, ops.address);
  });
}
