// A custom sending domain's own return path, bounces.<domain> (docs/dns.md, "Return path"): its two
// records are listed with the domain, confirmed through the loopback DNS server apart from the
// domain's status, and once confirmed the envelope sender moves there, so SPF passes for the From
// domain's own subdomain and aligns for DMARC (checked by mailauth on the delivered message). DSNs
// come back there and are handled like those at the shared bounce domain; nothing else is taken
// there. A return path that stops being published falls back to the shared bounce domain.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { sendRaw } from '../helpers/inbound.js';
import { buildDsn } from '../helpers/reports.js';
import { startSink } from '../helpers/smtp-sink.js';

// mailauth ships no type declarations; only authenticate() is used.
const { authenticate } = (await import('mailauth')) as { authenticate: (raw: Buffer, opts: object) => Promise<any> };

const HOST = 'mx.postern.test';
const RP = 'bounces.acme.example';

for (const db of testDatabases()) {
  t.test(`the return path bounces.<domain> on ${db}`, async (t) => {
    const sink = await startSink(t);
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
      [HOST]: [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: {
        POSTERN_DNS_SERVERS: dns.address,
        POSTERN_DELIVERY_PORT: String(sink.port),
        POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms',
        POSTERN_DOCTOR_PUBLIC_IPS: '127.0.0.1',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    const claim = await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'acme.example' } });
    t.equal(claim.status, 201);
    const dkim = (claim.body.records as { type: string; name: string; value: string }[]).find((r) => r.type === 'TXT')!;
    dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
    dns.set('acme.example', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }]);
    dns.set('_dmarc.acme.example', [{ type: 'TXT', data: 'v=DMARC1; p=reject; adkim=r; aspf=r' }]);
    const domain = async () => (await d.request('GET', `/v1/inbound/domains/${claim.body.id}`, { key: ws.live })).body;
    let sent = 0;
    // A new recipient each time: the DSN test suppresses the one it bounces.
    const send = async () => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to: `user${++sent}@example.net`, from: 'news@acme.example', channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      t.equal(r.status, 202, JSON.stringify(r.body));
      const before = sink.received.length;
      await dispatcher.tick();
      t.equal(sink.received.length, before + 1);
      return { id: r.body.id as string, received: sink.received.at(-1)! };
    };

    t.test('listed with the domain, pending until both records are published', async (t) => {
      const view = await domain();
      t.match(view.sending, { verified: true }, 'DKIM published: the domain sends');
      t.same(view.returnPath, {
        host: RP,
        verified: false,
        verifiedAt: null,
        stillPublished: null,
        records: [
          { type: 'MX', name: RP, value: HOST, priority: 10, purpose: /DSNs/ },
          { type: 'TXT', name: RP, value: 'v=spf1 ip4:127.0.0.1 -all', purpose: /SPF/ },
        ].map((r) => ({ ...r, purpose: view.returnPath.records.find((x: { type: string }) => x.type === r.type).purpose })),
      });
      const { id, received } = await send();
      t.equal(received.from, `bounces+${id}@bounces.${HOST}`, 'until then, the shared bounce domain');
      dns.set(RP, [{ type: 'MX', data: { preference: 10, exchange: HOST } }]);
      t.match((await domain()).returnPath, { verified: false }, 'the MX alone is not enough');
      dns.set(RP, [
        { type: 'TXT', data: 'v=spf1 ip4:192.0.2.1 -all' },
        { type: 'MX', data: { preference: 10, exchange: HOST } },
      ]);
      t.match((await domain()).returnPath, { verified: false }, 'an SPF record that does not authorise the box is not enough');
    });

    t.test('confirmed: the envelope sender moves there and SPF aligns', async (t) => {
      dns.set(RP, [
        { type: 'MX', data: { preference: 10, exchange: HOST } },
        { type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' },
      ]);
      const view = await domain();
      t.match(view.returnPath, { verified: true, verifiedAt: /^\d{4}-/, stillPublished: true });
      t.equal(view.status, 'pending', 'the domain status is the MX and DKIM records’ alone');
      const { id, received } = await send();
      t.equal(received.from, `bounces+${id}@${RP}`);
      const auth = await authenticate(received.raw, {
        ip: '127.0.0.1',
        helo: HOST,
        sender: received.from,
        mta: 'mx.example.net',
        resolver: d.app.dns.resolve as any,
      });
      t.equal(auth.spf.status.result, 'pass', 'SPF passes for bounces.acme.example');
      t.equal(auth.dmarc.status.result, 'pass');
      t.match(auth.dmarc.alignment.spf, { result: RP }, 'SPF aligns with acme.example (relaxed)');
    });

    t.test('DSNs come back there and fail the message; nothing else is taken there', async (t) => {
      const { id, received } = await send();
      const reply = await sendRaw(
        d.smtpPort,
        { from: '', to: [received.from] },
        await buildDsn(received.from, [
          { recipient: received.to[0], action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' },
        ]),
      );
      t.match(reply, /^250/);
      t.match((await d.request('GET', `/v1/messages/${id}`, { key: ws.live })).body, {
        status: 'failed',
        error: /^bounced: user\d+@example\.net 5\.1\.1/,
      });
      await t.rejects(sendRaw(d.smtpPort, { from: 'x@example.net', to: [`postmaster@${RP}`] }, 'Subject: x\r\n\r\nx\r\n'), {
        responseCode: 550,
      } as never);
      await t.rejects(
        sendRaw(d.smtpPort, { from: 'x@example.net', to: ['bounces+msg_x@bounces.other.example'] }, 'Subject: x\r\n\r\nx\r\n'),
        { responseCode: 550 } as never,
      );
    });

    t.test('no longer published: new mail falls back to the shared bounce domain', async (t) => {
      dns.set(RP, [{ type: 'MX', data: { preference: 10, exchange: HOST } }]);
      await d.app.domains.recheckConfirmed();
      t.match((await domain()).returnPath, { verified: false, stillPublished: false });
      const { id, received } = await send();
      t.equal(received.from, `bounces+${id}@bounces.${HOST}`);
      // DSNs of mail sent while it was in use still come back there.
      const reply = await sendRaw(
        d.smtpPort,
        { from: '', to: [`bounces+${id}@${RP}`] },
        await buildDsn(`bounces+${id}@${RP}`, [{ recipient: received.to[0], action: 'delayed', status: '4.2.2', diagnostic: '452 full' }]),
      );
      t.match(reply, /^250/);
    });
  });
}
