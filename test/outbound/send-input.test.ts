// The send body's own rules (outbound/send-input.ts) as tables: the shape (unknown and reserved
// keys, each field's limits), the one-of rules and the scheduling window, and what depends on the
// channel. Every problem is reported at once; test/outbound/send.test.ts covers the HTTP answer.
import t from 'tap';
import type { SendBody } from '../../src/contract/sending-schemas.js';
import { channelIssues, readSendBody, shapeIssues } from '../../src/outbound/send-input.js';

const base = { to: 'ann@example.com', channel: 'email', content: { subject: 's', text: 'x' } };
const paths = (raw: unknown) => readSendBody(raw).issues.map((i) => i.path);
const ok = (raw: Record<string, unknown>) => paths({ ...base, ...raw });

t.test('not an object', async (t) => {
  for (const raw of [null, undefined, 'x', 3, [], [base]]) {
    const r = readSendBody(raw);
    t.same(r.issues, [{ path: '', message: 'the request body must be a JSON object' }], JSON.stringify(raw) ?? 'undefined');
    t.same(r.body, { vars: {}, metadata: {} });
    t.equal(r.refused.size, 0);
  }
});

t.test('a valid body', async (t) => {
  const r = readSendBody({ ...base, metadata: { a: 1 } });
  t.same(r.issues, []);
  t.same(r.body, { ...base, vars: {}, metadata: { a: 1 } }, 'vars and metadata default to {}');
  t.equal(r.refused.size, 0);
});

t.test('unknown fields are refused by name, with the likely one', async (t) => {
  t.same(readSendBody({ ...base, scheduled_at: 'x', Reply_To: 'a@b.c', colour: 1 }).issues, [
    { path: 'scheduled_at', message: 'unknown field; did you mean scheduledAt?' },
    { path: 'Reply_To', message: 'unknown field; did you mean replyTo?' },
    { path: 'colour', message: 'unknown field' },
  ]);
  t.same(readSendBody({ ...base, 'from-name': 'x' }).issues, [{ path: 'from-name', message: 'unknown field; did you mean fromName?' }]);
});

t.test('reserved keys in metadata and vars', async (t) => {
  const raw = JSON.parse('{"to":"ann@example.com","metadata":{"__proto__":"x","ok":"y"},"vars":{"constructor":1,"prototype":2}}');
  t.same(readSendBody(raw).issues.slice(0, 3), [
    { path: 'metadata.__proto__', message: '__proto__ is a reserved key' },
    { path: 'vars.constructor', message: 'constructor is a reserved key' },
    { path: 'vars.prototype', message: 'prototype is a reserved key' },
  ]);
  t.same(paths({ ...base, vars: ['__proto__'] }), ['vars'], 'an array is not searched for keys');
  t.same(paths({ ...base, metadata: 'constructor' }), ['metadata']);
});

t.test('what the schema refuses is named, and the rest is kept', async (t) => {
  const r = readSendBody({ to: 'ann@example.com', channel: 'fax', template: 'welcome', vars: { a: 1 }, version: 0 });
  t.same(
    r.issues.map((i) => i.path),
    ['channel', 'version'],
  );
  t.same(r.issues[1], { path: 'version', message: 'must be at least 1' });
  t.same([...r.refused].sort(), ['channel', 'version']);
  t.same(r.body, { to: 'ann@example.com', template: 'welcome', vars: { a: 1 }, metadata: {} }, 'the accepted fields, defaults applied');
});

t.test("each field's limits", async (t) => {
  const cases: [string, Record<string, unknown>, string[]][] = [
    ['to empty', { to: '' }, ['to']],
    ['to at 8192', { to: 'a'.repeat(8192) }, []],
    ['to past 8192', { to: 'a'.repeat(8193) }, ['to']],
    ['template empty', { template: '' }, ['template']],
    ['template at 100', { template: 'a'.repeat(100) }, []],
    ['template past 100', { template: 'a'.repeat(101) }, ['template']],
    ['channel', { channel: 'sms' }, []],
    ['metadata 50 keys', { metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i])) }, []],
    ['metadata 51 keys', { metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }, ['metadata']],
    ['metadata key of 40', { metadata: { ['k'.repeat(40)]: 1 } }, []],
    ['metadata key of 41', { metadata: { ['k'.repeat(41)]: 1 } }, ['metadata']],
    ['metadata empty key', { metadata: { '': 1 } }, ['metadata']],
    ['metadata key with a control character', { metadata: { 'a\nb': 1 } }, ['metadata']],
    ['metadata key with DEL', { metadata: { 'a\u007fb': 1 } }, ['metadata']],
    ['metadata value of 500', { metadata: { a: 'x'.repeat(500) } }, []],
    ['metadata value past 500', { metadata: { a: 'x'.repeat(501) } }, ['metadata.a']],
    ['metadata boolean', { metadata: { a: true } }, []],
    ['metadata object', { metadata: { a: {} } }, ['metadata.a']],
    ['metadata null', { metadata: { a: null } }, ['metadata.a']],
    ['scheduledAt with a zone', { scheduledAt: '2030-01-01T09:00:00+02:00' }, []],
    ['scheduledAt without a zone', { scheduledAt: '2030-01-01T09:00:00' }, ['scheduledAt']],
    ['from', { from: 'me@example.com' }, []],
    ['from with a name', { from: 'Me <me@example.com>' }, ['from']],
    ['fromName', { fromName: 'Ann' }, []],
    ['fromName at 128', { fromName: 'a'.repeat(128) }, []],
    ['fromName past 128', { fromName: 'a'.repeat(129) }, ['fromName']],
    ['fromName with <', { fromName: 'a<b' }, ['fromName']],
    ['fromName with >', { fromName: 'a>b' }, ['fromName']],
    ['fromName with a newline', { fromName: 'a\r\nBcc: x@y.z' }, ['fromName']],
    ['fromName with DEL', { fromName: 'a\u007f' }, ['fromName']],
    ['version 1', { version: 1 }, []],
    ['version 1.5', { version: 1.5 }, ['version']],
    ['cc one address', { cc: 'b@example.com' }, []],
    ['cc 50 addresses', { cc: Array.from({ length: 50 }, (_, i) => `u${i}@example.com`) }, []],
    ['cc 51 addresses', { cc: Array.from({ length: 51 }, (_, i) => `u${i}@example.com`) }, ['cc']],
    ['bcc a bad address', { bcc: ['b@example.com', 'nope'] }, ['bcc.1']],
    ['replyTo', { replyTo: 'r@example.com' }, []],
    ['replyTo bad', { replyTo: 'r@' }, ['replyTo']],
    ['interpolate', { interpolate: false }, []],
  ];
  for (const [name, raw, expected] of cases) {
    const got = ok(raw);
    // A union (cc, bcc) may name the field and the element: compare the set of paths.
    t.same([...new Set(got)].sort(), [...new Set(expected)].sort(), name);
  }
  t.same(readSendBody({ ...base, cc: 'b@example.com' }).body.cc, ['b@example.com'], 'one address becomes a list');
  t.same(readSendBody({ ...base, fromName: 'a<b' }).issues, [
    { path: 'fromName', message: 'must not contain control characters or angle brackets' },
  ]);
  t.same(readSendBody({ ...base, fromName: 'a'.repeat(129) }).issues, [{ path: 'fromName', message: 'at most 128 characters' }]);
  t.same(readSendBody({ ...base, replyTo: 'nope' }).issues, [
    { path: 'replyTo', message: 'must be a bare email address such as someone@example.com' },
  ]);
  t.same(
    readSendBody({ ...base, metadata: { a: Infinity } }).issues,
    [{ path: 'metadata.a', message: 'metadata values must be string, number or boolean' }],
    'an infinite number',
  );
  t.same(readSendBody({ ...base, to: '' }).issues, [{ path: 'to', message: 'required' }]);
  t.same(readSendBody({ ...base, metadata: { ['k'.repeat(41)]: 1 } }).issues, [
    { path: 'metadata', message: 'metadata keys are 1-40 characters without control characters' },
  ]);
  t.same(readSendBody({ ...base, metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }).issues, [
    { path: 'metadata', message: 'at most 50 metadata keys' },
  ]);
  t.same(readSendBody({ ...base, metadata: { a: [] } }).issues, [
    { path: 'metadata.a', message: 'metadata values must be string, number or boolean' },
  ]);
  t.same(readSendBody({ ...base, scheduledAt: 'tomorrow' }).issues, [
    { path: 'scheduledAt', message: 'must be an ISO 8601 date-time with a time zone, such as 2030-01-01T09:00:00Z' },
  ]);
});

t.test('email addresses', async (t) => {
  const good = [
    'a@b.c',
    'a@b.c.d',
    'a@b.co',
    'first.last+tag@sub.example.com',
    'x@a-b.example',
    `${'a'.repeat(64)}@example.com`,
    'a@0.example',
  ];
  const bad = [
    'a@b',
    '@b.co',
    'a@',
    'a b@c.co',
    'a@b..co',
    'a@-b.co',
    'a@b-.co',
    'a<b@c.co',
    'a>b@c.co',
    'a(b@c.co',
    'a)b@c.co',
    'a[b@c.co',
    'a]b@c.co',
    'a,b@c.co',
    'a;b@c.co',
    'a:b@c.co',
    'a"b@c.co',
    'a\\b@c.co',
    'a@b@c.co',
    'a@b_c.co',
    `a@${'b'.repeat(64)}.co`,
    'a@b.co ',
    ' a@b.co',
    'a@b.co\n',
  ];
  for (const s of good) t.same(ok({ replyTo: s }), [], `good: ${s}`);
  for (const s of bad) t.same(ok({ replyTo: s }), ['replyTo'], `bad: ${JSON.stringify(s)}`);
  t.same(ok({ replyTo: `a@${'b'.repeat(63)}.co` }), [], 'a label of 63');
  t.same(ok({ replyTo: `${'a'.repeat(300)}@${'b'.repeat(16)}.co` }), [], '320 characters');
  t.same(ok({ replyTo: `${'a'.repeat(301)}@${'b'.repeat(16)}.co` }), ['replyTo'], 'past 320 characters');
});

t.test('attachments', async (t) => {
  const a = { filename: 'a.pdf', contentType: 'application/pdf', content: 'JVBERi0=' };
  const cases: [string, Record<string, unknown>, string[]][] = [
    ['valid', a, []],
    ['base64 with line breaks', { ...a, content: 'QUJD\r\nREVG\n' }, []],
    ['base64 with one =', { ...a, content: 'QUI=' }, []],
    ['base64 with three =', { ...a, content: 'QQ===' }, ['attachments.0.content']],
    ['base64 = inside', { ...a, content: 'QQ==QQ==' }, ['attachments.0.content']],
    ['not base64', { ...a, content: 'not base64!' }, ['attachments.0.content']],
    ['base64 with a space inside', { ...a, content: 'QU JD' }, ['attachments.0.content']],
    ['empty content', { ...a, content: '' }, ['attachments.0.content']],
    ['empty filename', { ...a, filename: '' }, ['attachments.0.filename']],
    ['filename of 255', { ...a, filename: 'a'.repeat(255) }, []],
    ['filename past 255', { ...a, filename: 'a'.repeat(256) }, ['attachments.0.filename']],
    ['filename with a slash', { ...a, filename: '../a' }, ['attachments.0.filename']],
    ['filename with a backslash', { ...a, filename: 'a\\b' }, ['attachments.0.filename']],
    ['filename with a newline', { ...a, filename: 'a\nb' }, ['attachments.0.filename']],
    ['filename with NUL', { ...a, filename: 'a\u0000' }, ['attachments.0.filename']],
    ['content type in capitals', { ...a, contentType: 'Application/PDF' }, []],
    ['content type with +', { ...a, contentType: 'image/svg+xml' }, []],
    ['content type without a subtype', { ...a, contentType: 'application' }, ['attachments.0.contentType']],
    ['content type with parameters', { ...a, contentType: 'text/plain; charset=utf-8' }, ['attachments.0.contentType']],
    ['content type with a prefix', { ...a, contentType: ' text/plain' }, ['attachments.0.contentType']],
    ['content type with a suffix', { ...a, contentType: 'text/plain/x' }, ['attachments.0.contentType']],
    ['another field', { ...a, disposition: 'inline' }, ['attachments.0']],
  ];
  for (const [name, att, expected] of cases) t.same(ok({ attachments: [att] }), expected, name);
  t.same(ok({ attachments: Array(20).fill(a) }), [], '20 attachments');
  t.same(ok({ attachments: Array(21).fill(a) }), ['attachments'], '21 attachments');
  t.same(readSendBody({ ...base, attachments: [{ ...a, content: '!' }] }).issues[0].message, 'must be base64');
  t.same(
    readSendBody({ ...base, attachments: [{ ...a, filename: 'a/b' }] }).issues[0].message,
    'must not contain control characters or slashes',
  );
  t.same(
    readSendBody({ ...base, attachments: [{ ...a, contentType: 'pdf' }] }).issues[0].message,
    'must be a MIME type such as application/pdf',
  );
});

t.test('one-of rules and the scheduling window', async (t) => {
  const now = new Date('2030-01-01T00:00:00Z');
  const shape = (body: Partial<SendBody>, raw = false) => shapeIssues({ to: 'a@b.co', vars: {}, metadata: {}, ...body }, { raw, now });
  const email = { channel: 'email' as const, content: { subject: 's', text: 'x' } };
  t.same(shape(email), []);
  t.same(shape({ template: 'w' }), []);
  t.same(shape(email, true), [], 'send-raw with content');
  t.same(shape({ template: 'w' }, true), [{ path: 'template', message: 'send-raw takes content, not template' }]);
  t.same(shape({}, true), [{ path: 'content', message: 'content is required' }]);
  t.same(shape({}), [{ path: 'template', message: 'one of template or content is required' }]);
  t.same(shape({ ...email, template: 'w' }), [{ path: 'content', message: 'give either template or content, not both' }]);
  t.same(shape({ content: { subject: 's', text: 'x' } }), [{ path: 'channel', message: 'channel is required for a raw send' }]);
  t.same(shape({ ...email, version: 2 }), [{ path: 'version', message: 'version applies to template sends only' }]);
  t.same(shape({ template: 'w', version: 2 }), []);
  t.same(shape({ template: 'w', channel: 'email' }), [], 'a template send may name its channel: no content to check');
  t.same(shape({ template: 'w', interpolate: true }), [{ path: 'interpolate', message: 'interpolate applies to inline content only' }]);
  t.same(shape({ ...email, interpolate: false }), []);

  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
  const DAY = 24 * 3600 * 1000;
  t.same(shape({ template: 'w', scheduledAt: at(1000) }), [], 'a second ahead');
  t.same(shape({ template: 'w', scheduledAt: at(0) }), [{ path: 'scheduledAt', message: 'must be in the future' }], 'now');
  t.same(shape({ template: 'w', scheduledAt: at(-1000) }), [{ path: 'scheduledAt', message: 'must be in the future' }], 'past');
  t.same(shape({ template: 'w', scheduledAt: at(30 * DAY) }), [], 'exactly 30 days ahead');
  t.same(shape({ template: 'w', scheduledAt: at(30 * DAY + 1000) }), [{ path: 'scheduledAt', message: 'must be within 30 days' }]);

  t.same(shape({ channel: 'email', content: { subject: 's' } }), [{ path: 'content.html', message: 'email content needs html or text' }]);
  t.same(shape({ channel: 'sms', content: { body: 'hi' } }), [], "the channel's content schema");
  t.same(
    shape({ channel: 'sms', content: { subject: 's', text: 'x' } }).map((i) => i.path),
    ['content.body', 'content'],
    "another channel's content is refused under content, each issue with its path",
  );
});

t.test('what depends on the channel', async (t) => {
  const body = (over: Partial<SendBody>) => ({ vars: {}, metadata: {}, to: '', ...over });
  const sub = (o: Record<string, unknown>) =>
    JSON.stringify({ endpoint: 'https://push.example/x', keys: { p256dh: 'p', auth: 'a' }, ...o });
  const cases: [string, Parameters<typeof channelIssues>[0], string, string[]][] = [
    ['email', 'email', 'a@b.co', []],
    ['email, a phone number', 'email', '+14155550100', ['must be an email address']],
    ['sms', 'sms', '+14155550100', []],
    ['sms, 15 digits', 'sms', '+123456789012345', []],
    ['sms, 16 digits', 'sms', '+1234567890123456', ['must be an E.164 phone number such as +14155550100']],
    ['sms, without +', 'sms', '14155550100', ['must be an E.164 phone number such as +14155550100']],
    ['sms, leading 0', 'sms', '+04155550100', ['must be an E.164 phone number such as +14155550100']],
    ['sms, one digit', 'sms', '+1', ['must be an E.164 phone number such as +14155550100']],
    ['sms, two digits', 'sms', '+12', []],
    ['sms, with a space', 'sms', '+1 4155550100', ['must be an E.164 phone number such as +14155550100']],
    ['email, with a space', 'email', 'a b@c.co', ['must be an email address']],
    ['sms, trailing text', 'sms', '+14155550100x', ['must be an E.164 phone number such as +14155550100']],
    ['sms, leading text', 'sms', 'x+14155550100', ['must be an E.164 phone number such as +14155550100']],
    ['push', 'push', 'abc123', []],
    ['push, blank', 'push', '   ', ['must be a push device token']],
    ['push, a space inside', 'push', 'abc 123', ['must be a push device token']],
    ['push, a trailing newline', 'push', 'abc\n', ['must be a push device token']],
    ['web-push', 'web-push', sub({}), []],
    ['web-push, not JSON', 'web-push', 'abc', ['must be a JSON-encoded web push subscription']],
    ['web-push, JSON null', 'web-push', 'null', ['must be a JSON-encoded web push subscription']],
    ['web-push, JSON number', 'web-push', '3', ['must be a JSON-encoded web push subscription']],
    ['web-push, http endpoint', 'web-push', sub({ endpoint: 'http://push.example/x' }), ['subscription endpoint must be an https URL']],
    [
      'web-push, endpoint in a list',
      'web-push',
      sub({ endpoint: ['https://push.example/x'] }),
      ['subscription endpoint must be an https URL'],
    ],
    ['web-push, no endpoint', 'web-push', sub({ endpoint: undefined }), ['subscription endpoint must be an https URL']],
    ['web-push, endpoint not a URL', 'web-push', sub({ endpoint: 'push' }), ['subscription endpoint must be an https URL']],
    ['web-push, no keys', 'web-push', sub({ keys: undefined }), ['subscription needs keys.p256dh and keys.auth']],
    ['web-push, empty p256dh', 'web-push', sub({ keys: { p256dh: '', auth: 'a' } }), ['subscription needs keys.p256dh and keys.auth']],
    ['web-push, empty auth', 'web-push', sub({ keys: { p256dh: 'p', auth: '' } }), ['subscription needs keys.p256dh and keys.auth']],
    ['web-push, numeric p256dh', 'web-push', sub({ keys: { p256dh: 1, auth: 'a' } }), ['subscription needs keys.p256dh and keys.auth']],
    ['web-push, numeric auth', 'web-push', sub({ keys: { p256dh: 'p', auth: 1 } }), ['subscription needs keys.p256dh and keys.auth']],
    ['web-push, missing auth', 'web-push', sub({ keys: { p256dh: 'p' } }), ['subscription needs keys.p256dh and keys.auth']],
  ];
  for (const [name, channel, to, expected] of cases) {
    t.same(
      channelIssues(channel, body({ to })),
      expected.map((message) => ({ path: 'to', message })),
      name,
    );
  }
  t.same(channelIssues('email', body({ to: '' })), [], 'no recipient: the schema already said so');

  const emailOnly = { from: 'a@b.co', fromName: 'A', cc: ['c@d.co'], bcc: ['e@f.co'], replyTo: 'r@s.co', attachments: [] };
  t.same(channelIssues('email', body({ to: 'a@b.co', ...emailOnly })), [], 'email takes them');
  for (const channel of ['sms', 'push'] as const) {
    t.same(
      channelIssues(channel, body({ ...emailOnly, to: channel === 'sms' ? '+14155550100' : 'tok' })),
      ['from', 'fromName', 'cc', 'bcc', 'replyTo', 'attachments'].map((f) => ({ path: f, message: `${f} applies to email only` })),
      `${channel} refuses the email-only fields`,
    );
  }
});
