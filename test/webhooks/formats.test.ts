// Webhook payload formats (docs/api/webhooks.md, "Payload formats"): an endpoint created with
// `format` sendgrid, postmark or resend gets each event in that vendor's shape, authenticated as
// the vendor does, and checked here by the vendors' own verification code: SendGrid's
// `@sendgrid/eventwebhook` (ECDSA with the endpoint's verification key) and Svix's `svix` (what
// Resend signs with). The Postmark and SendGrid shapes are also held to what listmonk's bounce
// webhooks read (internal/bounce/webhooks/postmark.go and sendgrid.go: the field names and JSON
// types its structs decode, the basic authentication it checks), since listmonk is the consumer
// the issue names and it cannot run here.
import { EventWebhook } from '@sendgrid/eventwebhook';
import { Webhook } from 'svix';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startReceiver, verify, type Receiver } from '../helpers/webhook-receiver.js';
import { emit, sampleMessage, tick } from '../helpers/webhooks.js';
import type { EventType } from '../../src/contract/webhooks.js';

interface Endpoint {
  id: string;
  secret: string;
  format: string;
  verificationKey: string | null;
}

async function endpoint(d: TestDaemon, key: string, body: Record<string, unknown>): Promise<Endpoint> {
  const r = await d.request('POST', '/v1/webhooks', { key, body });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body as Endpoint;
}

const message = (n: number, over: Record<string, unknown> = {}) => ({
  ...sampleMessage(n),
  recipient: `Person${n}@Example.com`,
  metadata: { n, campaign: 'autumn' },
  providerMessageId: `<msg${n}@mx.postern.test>`,
  fromOverride: 'news@acme.example',
  error: null,
  openedAt: null,
  clickedAt: null,
  createdAt: '2026-11-29T10:00:00.000Z',
  ...over,
});

const EVENTS: [EventType, Record<string, unknown>][] = [
  ['message.sent', { status: 'sent' }],
  ['message.delivered', {}],
  ['message.failed', { status: 'failed', error: 'mx.example.com: 550 5.1.1 <person3@example.com>: user unknown' }],
  ['message.clicked', { clickedAt: '2026-11-29T11:00:00.000Z', link: 'https://acme.example/autumn' }],
  ['message.suppressed', { status: 'suppressed', error: 'on the suppression list (bounce)' }],
];

for (const db of testDatabases()) {
  t.test(`vendor payload formats on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    const ws = await d.workspace('acme');
    const receivers: Receiver[] = [];
    const receiver = async () => {
      const r = await startReceiver();
      receivers.push(r);
      t.teardown(() => r.close());
      return r;
    };
    const [sg, pm, rs] = [await receiver(), await receiver(), await receiver()];
    const sgEp = await endpoint(d, ws.live, { url: sg.url, format: 'sendgrid' });
    const pmUrl = new URL(pm.url);
    pmUrl.username = 'listmonk';
    pmUrl.password = 's3cr:et';
    const pmEp = await endpoint(d, ws.live, { url: pmUrl.href, format: 'postmark' });
    const rsEp = await endpoint(d, ws.live, { url: rs.url, format: 'resend' });
    t.match(
      sgEp,
      { format: 'sendgrid', verificationKey: /^MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE[A-Za-z0-9+/]+=*$/ },
      'a P-256 key, as SendGrid shows one',
    );
    t.match(pmEp, { format: 'postmark', verificationKey: null });

    t.test('a vendor format refuses event types it has no event for', async (t) => {
      const r = await d.request('POST', '/v1/webhooks', {
        key: ws.live,
        body: { url: pm.url, format: 'postmark', events: ['message.sent'] },
      });
      t.equal(r.status, 422);
      t.match(r.body.error.issues, [{ path: 'events', message: /postmark format has no event for message\.sent/ }]);
      const patched = await d.request('PATCH', `/v1/webhooks/${sgEp.id}`, { key: ws.live, body: { events: ['message.received'] } });
      t.equal(patched.status, 422);
      t.equal(
        (await d.request('PATCH', `/v1/webhooks/${sgEp.id}`, { key: ws.live, body: { format: 'resend' } })).status,
        422,
        'the format is fixed',
      );
    });

    // Signatures carry the time of the attempt, which Svix checks against the real clock.
    d.clock.set(Date.now());
    for (const [i, [type, over]] of EVENTS.entries()) await emit(d, ws.id, type, message(i + 1, over));
    await emit(d, ws.id, 'message.received', { id: 'rcv_x', subject: 'hello' });
    await emit(d, ws.id, 'report.dmarc', { domain: 'acme.example' });
    await tick(d);

    t.test('sendgrid: an array of events, signed with ECDSA', async (t) => {
      const ew = new EventWebhook();
      const key = ew.convertPublicKeyToECDSA(sgEp.verificationKey!);
      for (const r of sg.requests) {
        const sig = String(r.headers['x-twilio-email-event-webhook-signature']);
        const ts = String(r.headers['x-twilio-email-event-webhook-timestamp']);
        t.ok(ew.verifySignature(key, r.body, sig, ts), `${r.json[0].event}: SendGrid's own code verifies it`);
        t.notOk(ew.verifySignature(key, r.body.replace('autumn', 'winter'), sig, ts), 'and refuses another body');
      }
      const events = sg.requests.map((r) => r.json[0]).sort((a, b) => a.email.localeCompare(b.email));
      t.same(
        events.map((e) => e.event),
        ['processed', 'delivered', 'bounce', 'click', 'dropped'],
        'every message event, none for received mail or reports',
      );
      for (const e of events) {
        // listmonk's sendgridNotif: email string, timestamp int64, event string.
        t.match(e, { email: /^Person\d@Example\.com$/, sg_event_id: /^evt_/, sg_message_id: /^msg_/, campaign: 'autumn' });
        t.ok(Number.isInteger(e.timestamp), 'timestamp in Unix seconds');
      }
      t.match(events[2], { type: 'bounce', status: '5.1.1', reason: /user unknown/, 'smtp-id': '<msg3@mx.postern.test>', n: 3 });
      t.match(events[3], { url: 'https://acme.example/autumn' });
      t.match(events[4], { reason: 'on the suppression list (bounce)' });
    });

    t.test('postmark: one record per POST, basic authentication from the URL', async (t) => {
      const records = pm.requests.map((r) => r.json).sort((a, b) => String(a.MessageID).localeCompare(String(b.MessageID)));
      t.same(
        records.map((r) => r.RecordType),
        ['Delivery', 'Bounce', 'Click'],
        'Postmark has no event for a send, a drop or received mail',
      );
      for (const r of pm.requests) {
        t.equal(r.headers.authorization, `Basic ${Buffer.from('listmonk:s3cr:et').toString('base64')}`, 'the URL’s credentials');
        t.ok(verify(pmEp.secret, r), 'and Postern’s own signature beside them');
      }
      const bounce = records[1];
      // listmonk's postmarkNotif: strings, ints, a map of strings, an RFC 3339 time.
      t.match(bounce, {
        Type: 'HardBounce',
        TypeCode: 1,
        Email: 'Person3@Example.com',
        From: 'news@acme.example',
        Details: /550 5\.1\.1/,
        MessageStream: 'outbound',
        Metadata: { n: '3', campaign: 'autumn' },
      });
      t.notOk(Number.isNaN(Date.parse(bounce.BouncedAt)), 'BouncedAt is a time');
      t.notOk('ID' in bounce, 'no ID: Postmark’s is a number Postern does not have');
      t.match(records[2], {
        Recipient: 'Person4@Example.com',
        OriginalLink: 'https://acme.example/autumn',
        ReceivedAt: '2026-11-29T11:00:00.000Z',
      });
    });

    t.test('resend: email.* events, signed by Svix’s scheme', async (t) => {
      const wh = new Webhook(rsEp.secret);
      const types: string[] = [];
      for (const r of rs.requests) {
        const headers = {
          'svix-id': String(r.headers['svix-id']),
          'svix-timestamp': String(r.headers['svix-timestamp']),
          'svix-signature': String(r.headers['svix-signature']),
        };
        const payload = wh.verify(r.body, headers) as { type: string; data: Record<string, unknown> };
        types.push(payload.type);
        t.match(payload.data, {
          email_id: /^msg_/,
          to: [/^Person\d@Example\.com$/],
          from: 'news@acme.example',
          tags: { campaign: 'autumn' },
        });
        t.throws(() => wh.verify(r.body.replace('autumn', 'winter'), headers), 'Svix refuses another body');
      }
      t.same(types.sort(), ['email.bounced', 'email.clicked', 'email.delivered', 'email.sent']);
      const bounced = rs.requests.find((r) => r.json.type === 'email.bounced')!.json;
      t.match(bounced.data.bounce, { message: /user unknown/, type: 'Permanent' });
    });
  });
}
