// Forwarding end to end: mail in over SMTP, out to a loopback MX unchanged below the trace headers,
// from an SRS envelope sender, with an ARC seal that mailauth validates; loops and failures visible.
import { generateKeyPairSync } from 'node:crypto';
import { authenticate } from 'mailauth';
import t from 'tap';
import { srsForward, srsReverse } from '../../src/forwarding/srs.js';
import { createResolver } from '../../src/lib/dns.js';
import { startSink } from '../helpers/smtp-sink.js';
import { createAddress, sendRaw, setup, simpleMail, transport } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`SRS0 round trip and forgery (${db})`, async (t) => {
    const now = new Date('2026-01-02T00:00:00Z');
    const srs = srsForward('secret', 'Alice@Sender.example', 'bounces.example.com', now);
    t.match(srs, /^SRS0=[^=]{4}=[A-Z2-7]{2}=Sender\.example=Alice@bounces\.example\.com$/);
    t.equal(srsReverse('secret', srs), 'Alice@Sender.example');
    t.equal(srsReverse('other', srs), null, 'another secret does not verify');
    const day = 86_400_000;
    t.equal(srsReverse('secret', srs, new Date(now.getTime() + 21 * day)), 'Alice@Sender.example', 'honoured for 21 days');
    t.equal(srsReverse('secret', srs, new Date(now.getTime() + 22 * day)), null, 'then refused, as postsrsd does');
    t.equal(srsForward('secret', '', 'bounces.example.com', now), '', 'the null sender stays null');
  });

  t.test(`forwarding end to end (${db})`, async (t) => {
    let rcptRule: (a: string) => { code: number; message: string } | undefined = () => undefined;
    const sink = await startSink(t, { rcpt: (a) => rcptRule(a) });
    const env = await setup(t, { db, env: { POSTERN_DELIVERY_PORT: String(sink.port), POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms' } });
    const { d, dns } = env;
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    dns.set('sender.example', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
    dns.set('s1._domainkey.sender.example', [
      { type: 'TXT', data: `v=DKIM1; k=rsa; p=${(publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64')}` },
    ]);
    dns.set('_dmarc.sender.example', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
    dns.set('example.net', [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }]);
    dns.set('mx.example.net', [{ type: 'A', data: '127.0.0.1' }]);
    const arc = await d.app.forwarding.arcRecord();
    t.match(arc, { name: 'arc._domainkey.mx.postern.test', type: 'TXT', value: /^v=DKIM1; k=rsa; p=/ });
    dns.set(arc.name, [{ type: 'TXT', data: arc.value }]);
    const cliArc = await d.cli('forwarding', 'arc-record');
    t.same(cliArc.json, arc, 'the CLI prints the same record');

    const fwd = await createAddress(env, { localPart: 'fwd', forwardTo: 'dest@example.net' });
    const forwarder = d.app.workers.find((w) => w.name === 'forwarder')!;
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    const bySubject = async (subject: string) =>
      (await d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages.find(
        (m: { subject: string }) => m.subject === subject,
      );
    const run = async () => {
      await forwarder.tick();
      await dispatcher.tick();
    };

    await transport(d.smtpPort).sendMail({
      from: 'Alice <alice@sender.example>',
      to: fwd.address,
      subject: 'Forward me',
      text: 'Original body.',
      dkim: { domainName: 'sender.example', keySelector: 's1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string },
    });
    await run();
    await sink.waitFor(1);
    const out = sink.received[0];
    t.same(out.to, ['dest@example.net']);
    t.match(out.from, /^SRS0=[^=]{4}=[A-Z2-7]{2}=sender\.example=alice@bounces\.mx\.postern\.test$/, 'SRS envelope sender');

    const [rcv] = (await d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages;
    const original = Buffer.from(
      await (
        await fetch(`${d.url}/v1/inbound/messages/${rcv.id}/raw`, { headers: { authorization: `Bearer ${env.ws.live}` } })
      ).arrayBuffer(),
    );
    const text = out.raw.toString('latin1');
    t.ok(text.endsWith(original.toString('latin1')), 'the stored original follows the added headers byte for byte');
    const added = text.slice(0, text.length - original.length);
    t.match(added, /^ARC-Seal: i=1; a=rsa-sha256;/);
    t.match(added, /ARC-Message-Signature: i=1;/);
    t.match(added, /ARC-Authentication-Results: i=1; mx\.postern\.test;/);
    t.match(added, /Received: by mx\.postern\.test \(Postern\) with forwarding id msg_/);
    t.match(added, new RegExp(`X-Postern-Forwarded: ${rcv.id} by mx.postern.test for <dest@example.net>`));

    const verdict = await authenticate(out.raw, {
      ip: '127.0.0.1',
      helo: 'mx.postern.test',
      sender: out.from,
      mta: 'mx.example.net',
      resolver: createResolver([dns.address], 5000).resolve,
    });
    t.equal(verdict.arc.status.result, 'pass', 'mailauth validates the ARC chain');
    t.equal(verdict.dkim.results[0].status.result, 'pass', 'the original DKIM signature still verifies');
    t.match(verdict.arc.authResults?.['arc-authentication-results'] ?? JSON.stringify(verdict.arc), /dkim=pass|spf=pass/);

    const link = await d.request('GET', `/v1/inbound/messages/${rcv.id}/forward`, { key: env.ws.live });
    t.equal(link.status, 200);
    t.match(link.body, {
      receivedId: rcv.id,
      forwardTo: 'dest@example.net',
      status: 'queued',
      reason: null,
      message: { publicId: /^msg_/, status: 'delivered', recipient: 'dest@example.net', metadata: { forwardOf: rcv.id } },
    });
    t.ok(link.body.message.timeline.length >= 2);

    t.test('a failing forward is visible on the linked message', async (t) => {
      rcptRule = (a) => (a === 'gone@example.net' ? { code: 550, message: '5.1.1 no such user' } : undefined);
      const bad = await createAddress(env, { localPart: 'bad', forwardTo: 'gone@example.net' });
      await sendRaw(
        d.smtpPort,
        { from: 'alice@sender.example', to: [bad.address] },
        simpleMail({ to: bad.address, subject: 'To a dead end' }),
      );
      await run();
      const latest = await bySubject('To a dead end');
      const view = (await d.request('GET', `/v1/inbound/messages/${latest.id}/forward`, { key: env.ws.live })).body;
      t.match(view, { status: 'queued', message: { status: 'failed', error: /550/ } });
    });

    t.test('never loops: mail Postern already forwarded is not forwarded again', async (t) => {
      const before = sink.received.length;
      await sendRaw(
        d.smtpPort,
        { from: 'alice@sender.example', to: [fwd.address] },
        simpleMail({
          to: fwd.address,
          subject: 'Looping',
          headers: `X-Postern-Forwarded: rcv_earlier by mx.postern.test for <${fwd.address}>`,
        }),
      );
      await run();
      const latest = await bySubject('Looping');
      const view = (await d.request('GET', `/v1/inbound/messages/${latest.id}/forward`, { key: env.ws.live })).body;
      t.match(view, { status: 'skipped', reason: /mail loop/, message: null });
      t.equal(sink.received.length, before);
      t.ok(d.logs.some((l) => /not forwarded/.test(l)));
    });

    t.test('an address without forwardTo has no forward', async (t) => {
      const plain = await createAddress(env, { localPart: 'plain' });
      await sendRaw(d.smtpPort, { from: 'alice@sender.example', to: [plain.address] }, simpleMail({ to: plain.address, subject: 'Stay' }));
      await run();
      const latest = await bySubject('Stay');
      t.equal((await d.request('GET', `/v1/inbound/messages/${latest.id}/forward`, { key: env.ws.live })).status, 404);
    });
  });

  t.test(`forwarding: the hop limit, a refused forward, and test mode (${db})`, async (t) => {
    const sink = await startSink(t);
    // A free workspace with a quota of 2 live messages a month: enough for the hop-limit forwards.
    const env = await setup(t, {
      db,
      plan: 'free',
      env: { POSTERN_DELIVERY_PORT: String(sink.port), POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms', POSTERN_PLANS_FREE_MESSAGES_PER_MONTH: '2' },
    });
    const { d, dns } = env;
    dns.set('example.net', [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }]);
    dns.set('mx.example.net', [{ type: 'A', data: '127.0.0.1' }]);
    const forwarder = d.app.workers.find((w) => w.name === 'forwarder')!;
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    const run = async () => {
      await forwarder.tick();
      await dispatcher.tick();
    };
    const forwardOf = async (subject: string, key = env.ws.live) => {
      const list = (await d.request('GET', '/v1/inbound/messages', { key })).body.messages as { id: string; subject: string }[];
      const rcv = list.find((m) => m.subject === subject);
      if (!rcv) throw new Error(`no received message ${subject}`);
      return (await d.request('GET', `/v1/inbound/messages/${rcv.id}/forward`, { key })).body;
    };
    // `n` Received headers from the hops before Postern; Postern's own trace header makes one more.
    const received = (n: number) =>
      Array.from({ length: n }, (_, i) => `Received: from hop${i}.example by hop${i + 1}.example; Mon, 02 Jan 2026 09:00:00 +0000`).join(
        '\r\n',
      );
    const fwd = await createAddress(env, { localPart: 'fwd', forwardTo: 'dest@example.net' });

    t.test('the hop limit: 25 Received headers (forwarding.maxHops) are not forwarded; 24 are', async (t) => {
      await sendRaw(
        d.smtpPort,
        { from: 'alice@sender.example', to: [fwd.address] },
        simpleMail({ to: fwd.address, subject: 'Hops 23', headers: received(23) }),
      );
      await sendRaw(
        d.smtpPort,
        { from: 'alice@sender.example', to: [fwd.address] },
        simpleMail({ to: fwd.address, subject: 'Hops 24', headers: received(24) }),
      );
      await run();
      await sink.waitFor(1);
      t.match(
        await forwardOf('Hops 23'),
        { status: 'queued', reason: null, message: { status: 'delivered' } },
        '23 + ours = 24: forwarded',
      );
      t.match(
        await forwardOf('Hops 24'),
        { status: 'skipped', reason: 'mail loop: 25 Received headers (limit 25)', message: null },
        '24 + ours = 25: a loop',
      );
      t.equal(sink.received.length, 1, 'only the first went out');
      t.match(sink.received[0].raw.toString(), /Subject: Hops 23/);
    });

    t.test('refused: a forward over the monthly quota is recorded, not sent', async (t) => {
      // One live send uses the second (last) message of the month.
      const used = await d.request('POST', '/v1/send-raw', {
        key: env.ws.live,
        body: { to: 'someone@example.net', channel: 'email', content: { subject: 'uses the quota', text: 'x' } },
      });
      t.equal(used.status, 202, JSON.stringify(used.body));
      const before = sink.received.length;
      await sendRaw(
        d.smtpPort,
        { from: 'alice@sender.example', to: [fwd.address] },
        simpleMail({ to: fwd.address, subject: 'Over quota' }),
      );
      await run();
      t.match(await forwardOf('Over quota'), {
        status: 'refused',
        reason: /^quota_exceeded: /,
        message: null,
        forwardTo: 'dest@example.net',
      });
      t.equal(sink.received.length, before + 1, 'only the API send went out');
      t.ok(d.logs.some((l) => /forward refused/.test(l)));
    });

    t.test('test mode: a test address forwards through the test channel; nothing leaves the machine', async (t) => {
      const before = sink.received.length;
      const dnsAsked = dns.queries.length;
      const testFwd = await createAddress(env, { localPart: 'tfwd', forwardTo: 'dest@example.net', livemode: false });
      await sendRaw(
        d.smtpPort,
        { from: 'alice@sender.example', to: [testFwd.address] },
        simpleMail({ to: testFwd.address, subject: 'Test forward' }),
      );
      await run();
      const view = await forwardOf('Test forward', env.ws.test);
      t.match(view, {
        status: 'queued',
        message: { status: 'delivered', provider: 'test', livemode: false, recipient: 'dest@example.net' },
      });
      t.equal(sink.received.length, before, 'the MX got nothing');
      t.notOk(
        dns.queries.slice(dnsAsked).some((q) => q.startsWith('MX ') || q === 'A mx.example.net'),
        'not even an MX lookup for the destination',
      );
    });
  });
}
