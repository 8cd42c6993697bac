import t from 'tap';
import { createTwilioTransport, twilioSignature, mapTwilioStatus } from '../../../src/channels/sms/twilio.js';
import { connection, delivery, startHttpFake, transportDeps } from '../../helpers/provider-fakes.js';

const SID = 'AC00000000000000000000000000000001';
const TOKEN = 'tw-auth-token-secret-9f8e7d';

t.test('twilio: the exact request, and sent with the message SID', async (t) => {
  const fake = await startHttpFake(t, () => ({ status: 201, body: { sid: 'SM123', status: 'queued' } }));
  const conn = connection('sms', 'twilio', { accountSid: SID, from: '+15005550006', baseUrl: fake.url }, { authToken: TOKEN });
  const tr = createTwilioTransport(conn, transportDeps());
  const out = await tr.deliver(delivery('sms', '+14155550100', { body: 'Your code is 123456' }));
  t.same(out, {
    kind: 'sent',
    provider: 'twilio',
    providerConnectionId: conn.id,
    providerMessageId: 'SM123',
    notes: ['sms: 1 segment (GSM-7, 19 septets)'],
  });
  t.equal(fake.requests.length, 1);
  const req = fake.requests[0];
  t.equal(req.method, 'POST');
  t.equal(req.url, `/2010-04-01/Accounts/${SID}/Messages.json`);
  t.equal(req.headers['content-type'], 'application/x-www-form-urlencoded');
  t.equal(req.headers.authorization, 'Basic ' + Buffer.from(`${SID}:${TOKEN}`).toString('base64'));
  t.same(Object.fromEntries(new URLSearchParams(req.body.toString())), {
    To: '+14155550100',
    Body: 'Your code is 123456',
    From: '+15005550006',
    StatusCallback: `https://postern.example/callbacks/twilio/${conn.id}`,
  });
});

t.test('twilio: messaging service instead of from; UCS-2 segments noted', async (t) => {
  const fake = await startHttpFake(t, () => ({ status: 201, body: { sid: 'SM9', status: 'accepted' } }));
  const conn = connection('sms', 'twilio', { accountSid: SID, messagingServiceSid: 'MG1', baseUrl: fake.url + '/' }, { authToken: TOKEN });
  const out = await createTwilioTransport(conn, transportDeps()).deliver(delivery('sms', '+14155550100', { body: 'Привет '.repeat(12) }));
  t.match(out, { kind: 'sent', notes: ['sms: 2 segments (UCS-2, 84 UTF-16 units)'] });
  const form = new URLSearchParams(fake.requests[0].body.toString());
  t.equal(form.get('MessagingServiceSid'), 'MG1');
  t.equal(form.get('From'), null);
});

t.test('twilio: answers mapped onto outcomes', async (t) => {
  const answers: [string, { status: number; headers?: Record<string, string>; body?: unknown }, Record<string, unknown>][] = [
    [
      '429 deferred with Retry-After',
      { status: 429, headers: { 'retry-after': '30' }, body: { code: 20429, message: 'Too Many Requests' } },
      { kind: 'deferred', retryAt: new Date('2030-01-01T00:00:30Z') },
    ],
    ['503 deferred', { status: 503, body: 'unavailable' }, { kind: 'deferred', error: 'twilio: HTTP 503' }],
    [
      'STOPped recipient: failed + suppress',
      { status: 400, body: { code: 21610, message: 'Attempt to send to unsubscribed recipient' } },
      { kind: 'failed', suppress: true, error: /21610/ },
    ],
    [
      'invalid To: failed + suppress',
      { status: 400, body: { code: 21211, message: "The 'To' number is not valid." } },
      { kind: 'failed', suppress: true },
    ],
    [
      'bad credentials: failed, no suppress',
      { status: 401, body: { code: 20003, message: 'Authenticate' } },
      { kind: 'failed', suppress: false },
    ],
    [
      'synchronous failure',
      { status: 201, body: { sid: 'SM1', status: 'failed', error_code: 30008 } },
      { kind: 'failed', error: /failed \(30008\)/ },
    ],
  ];
  for (const [name, answer, expected] of answers) {
    const fake = await startHttpFake(t, () => answer);
    const conn = connection('sms', 'twilio', { accountSid: SID, from: '+15005550006', baseUrl: fake.url }, { authToken: TOKEN });
    const out = await createTwilioTransport(conn, transportDeps()).deliver(delivery('sms', '+14155550100', { body: 'x' }));
    t.match(out, expected, name);
    t.notMatch(JSON.stringify(out), TOKEN, `${name}: no credential in the outcome`);
  }
});

t.test('twilio: network failure is deferred; a bad number never reaches the provider', async (t) => {
  const fake = await startHttpFake(t, () => ({ status: 201, body: {} }));
  await fake.close();
  const conn = connection('sms', 'twilio', { accountSid: SID, from: '+15005550006', baseUrl: fake.url }, { authToken: TOKEN });
  const tr = createTwilioTransport(conn, transportDeps());
  t.match(await tr.deliver(delivery('sms', '+14155550100', { body: 'x' })), { kind: 'deferred', error: /twilio: network error/ });
  t.match(await tr.deliver(delivery('sms', '555-0100', { body: 'x' })), { kind: 'suppressed', error: /E\.164/ });
});

t.test('twilio: signature and status mapping', async (t) => {
  // Twilio's documented example (https://www.twilio.com/docs/usage/security).
  const params = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
  t.equal(twilioSignature('12345', 'https://mycompany.com/myapp.php?foo=1&bar=2', params), '0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
  t.same(mapTwilioStatus({ MessageStatus: 'delivered' }), { status: 'delivered' });
  t.same(mapTwilioStatus({ MessageStatus: 'undelivered', ErrorCode: '30006' }), {
    status: 'failed',
    error: 'twilio: undelivered (error 30006)',
    suppress: true,
  });
  t.same(mapTwilioStatus({ MessageStatus: 'failed', ErrorCode: '30008' }), {
    status: 'failed',
    error: 'twilio: failed (error 30008)',
    suppress: false,
  });
  t.equal(mapTwilioStatus({ MessageStatus: 'sending' }), null);
});

t.test('twilio: a base URL on a private address is refused without a connection, unless allow-listed', async (t) => {
  const fake = await startHttpFake(t, () => ({ status: 201, body: { sid: 'SM1', status: 'queued' } }));
  const conn = connection('sms', 'twilio', { accountSid: SID, from: '+15005550006', baseUrl: fake.url }, { authToken: TOKEN });
  const guarded = createTwilioTransport(
    conn,
    transportDeps({ ssrf: { allowPrivate: false, allowList: [], settings: 'channels.allowPrivate or channels.allowList' } }),
  );
  t.match(await guarded.deliver(delivery('sms', '+14155550100', { body: 'x' })), {
    kind: 'failed',
    error: 'twilio: refused to connect to 127.0.0.1: private or loopback address (set channels.allowPrivate or channels.allowList)',
  });
  t.equal(fake.connections(), 0, 'no connection was made');
  const open = createTwilioTransport(
    conn,
    transportDeps({ ssrf: { allowPrivate: true, allowList: [], settings: 'channels.allowPrivate or channels.allowList' } }),
  );
  t.match(await open.deliver(delivery('sms', '+14155550100', { body: 'x' })), { kind: 'sent', providerMessageId: 'SM1' });
});
