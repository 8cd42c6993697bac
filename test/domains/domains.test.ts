// A custom domain's two capabilities, verified separately: sending (its DKIM record is published:
// it signs and may be `from`) and receiving (its MX points at Postern: Postern accepts mail for it).
// A domain that only sends never needs Postern as its MX; `status` stays what the interface says
// (verified once both checks pass). And a send whose `from` is not on a verified sending domain
// says on its timeline that it went out from the default sender.
import t from 'tap';
import { simpleParser } from 'mailparser';
import { testDatabases } from '../helpers/databases.js';
import { startSink } from '../helpers/smtp-sink.js';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';
const { authenticate } = (await import('mailauth')) as { authenticate: (raw: Buffer, opts: object) => Promise<any> };

const DAY = 24 * 3600 * 1000;

for (const db of testDatabases()) {
  t.test(`sending and receiving are verified separately on ${db}`, async (t) => {
    const sink = await startSink(t);
    const env = await setup(t, { db, plan: 'pro', env: { POSTERN_DELIVERY_PORT: String(sink.port) } });
    const { d, dns } = env;
    dns.set('example.net', [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }]);
    dns.set('mx.example.net', [{ type: 'A', data: '127.0.0.1' }]);
    const req = (method: string, p: string, body?: unknown) => d.request(method, `/v1/inbound${p}`, { key: env.ws.live, body });
    const tick = () => d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const send = async (from: string) => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: env.ws.live,
        body: { to: 'alice@example.net', channel: 'email', from, content: { subject: 'Hello', text: 'Hi' } },
      });
      t.equal(r.status, 202, JSON.stringify(r.body));
      await tick();
      return (await d.request('GET', `/v1/messages/${r.body.id}`, { key: env.ws.live })).body;
    };

    // corp.example keeps its mail at Google; it only sends through Postern.
    dns.set('corp.example', [{ type: 'MX', data: { preference: 10, exchange: 'aspmx.l.google.com' } }]);
    const claim = await req('POST', '/domains', { domain: 'corp.example', acknowledgeExistingMx: true });
    t.equal(claim.status, 201);
    t.match(claim.body, {
      status: 'pending',
      sending: { verified: false, verifiedAt: null },
      receiving: { verified: false, verifiedAt: null },
      records: [
        { check: 'inboundMx', verified: false },
        { check: 'dkim', verified: false },
      ],
    });
    const dkim = claim.body.records.find((r: { check: string }) => r.check === 'dkim');
    dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
    d.clock.advance(60_000);
    const sending = (await req('GET', `/domains/${claim.body.id}`)).body;
    t.match(sending, {
      status: 'pending',
      verifiedAt: null,
      sending: { verified: true, verifiedAt: d.clock.now().toISOString() },
      receiving: { verified: false, verifiedAt: null },
      records: [
        { check: 'inboundMx', verified: false },
        { check: 'dkim', verified: true },
      ],
    });

    t.test('a domain with its DKIM record confirmed signs and is used as from', async (t) => {
      const m = await send('news@corp.example');
      t.equal(m.status, 'delivered');
      t.notOk(
        m.timeline.some((e: { e: string }) => e.e.startsWith('from replaced')),
        'no replacement note',
      );
      const raw = sink.received.at(-1)!.raw;
      t.equal((await simpleParser(raw)).from?.value[0].address, 'news@corp.example');
      const auth = await authenticate(raw, {
        ip: '127.0.0.1',
        helo: 'mx.postern.test',
        sender: 'x@bounces.mx.postern.test',
        resolver: d.app.dns.resolve,
      });
      t.match(auth.dkim.results[0], { signingDomain: 'corp.example', status: { result: 'pass' } });
    });

    t.test('but Postern does not receive for it: RCPT refused, no addresses', async (t) => {
      await t.rejects(
        sendRaw(d.smtpPort, { from: 'a@example.org', to: ['sales@corp.example'] }, simpleMail({ to: 'sales@corp.example' })),
        {
          responseCode: 550,
        } as never,
      );
      t.equal((await req('POST', '/addresses', { localPart: 'sales', domainId: claim.body.id })).status, 422);
    });

    t.test('a sending domain does not expire for want of an MX', async (t) => {
      d.clock.advance(8 * DAY);
      t.match((await req('GET', `/domains/${claim.body.id}`)).body, { status: 'pending', sending: { verified: true } });
      t.equal(await d.app.domains.expireClaims(), 0);
      t.equal((await send('news@corp.example')).status, 'delivered');
    });

    t.test('publishing the MX too makes it receive, and verified', async (t) => {
      dns.set('corp.example', [{ type: 'MX', data: { preference: 10, exchange: 'mx.postern.test' } }]);
      const both = (await req('GET', `/domains/${claim.body.id}`)).body;
      t.match(both, {
        status: 'verified',
        verifiedAt: d.clock.now().toISOString(),
        sending: { verified: true },
        receiving: { verified: true, verifiedAt: d.clock.now().toISOString() },
        records: [
          { check: 'inboundMx', verified: true },
          { check: 'dkim', verified: true },
        ],
      });
      const addr = await createAddress(env, { localPart: 'sales', domainId: claim.body.id });
      t.equal(addr.address, 'sales@corp.example');
      t.match(
        await sendRaw(d.smtpPort, { from: 'a@example.org', to: ['sales@corp.example'] }, simpleMail({ to: 'sales@corp.example' })),
        /^250 /,
      );
    });

    t.test('a domain with only its MX confirmed receives, but does not sign', async (t) => {
      const mxOnly = await req('POST', '/domains', { domain: 'inbox.example' });
      dns.set('inbox.example', [{ type: 'MX', data: { preference: 10, exchange: 'mx.postern.test' } }]);
      t.match((await req('GET', `/domains/${mxOnly.body.id}`)).body, {
        status: 'pending',
        sending: { verified: false },
        receiving: { verified: true },
      });
      const addr = await createAddress(env, { localPart: 'help', domainId: mxOnly.body.id });
      t.match(await sendRaw(d.smtpPort, { from: 'a@example.org', to: [addr.address] }, simpleMail({ to: addr.address })), /^250 /);
      const m = await send('news@inbox.example');
      t.equal(m.status, 'delivered');
      t.ok(
        m.timeline.some(
          (e: { e: string }) =>
            e.e === 'from replaced: news@inbox.example is not a verified sending domain of this workspace; sent as postern@mx.postern.test',
        ),
        'the timeline says the from was replaced',
      );
      const raw = sink.received.at(-1)!.raw;
      t.equal((await simpleParser(raw)).from?.value[0].address, 'postern@mx.postern.test');
      t.notMatch(raw.toString(), /^DKIM-Signature:/m);
    });

    t.test('a from on a domain the workspace does not have is replaced, with a note', async (t) => {
      const m = await send('ceo@bank.example');
      t.equal(m.status, 'delivered');
      t.ok(
        m.timeline.some(
          (e: { e: string }) =>
            e.e === 'from replaced: ceo@bank.example is not a verified sending domain of this workspace; sent as postern@mx.postern.test',
        ),
        JSON.stringify(m.timeline),
      );
    });
  });
}

t.test('a claim with nothing confirmed still fails after 7 days', async (t) => {
  const env = await setup(t);
  const r = await env.d.request('POST', '/v1/inbound/domains', { key: env.ws.live, body: { domain: 'late.example' } });
  env.d.clock.advance(8 * DAY);
  t.equal(await env.d.app.domains.expireClaims(), 1);
  t.match((await env.d.request('GET', `/v1/inbound/domains/${r.body.id}`, { key: env.ws.live })).body, {
    status: 'failed',
    sending: { verified: false },
    receiving: { verified: false },
  });
});
