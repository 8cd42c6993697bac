// The X-Postern-* headers, as a table: what each asks for, and what is refused with which reason.
import t from 'tap';
import { decodeWords, readPosternHeaders } from '../../src/submission/headers.js';

const read = (headers: Record<string, string>) => readPosternHeaders((name) => headers[name]);

t.same(read({}), { fields: {}, issues: [] }, 'none: nothing asked');
t.same(read({ 'x-postern-metadata': '{"orderId": "1234", "n": 2}' }).fields, { metadata: { orderId: '1234', n: 2 } });
t.same(read({ 'x-postern-scheduled-at': ' 2030-01-01T09:00:00Z ' }).fields, { scheduledAt: '2030-01-01T09:00:00Z' });
t.same(read({ 'x-postern-template': 'welcome', 'x-postern-vars': '{"name":"Zoë"}' }).fields, {
  template: 'welcome',
  vars: { name: 'Zoë' },
});
t.same(
  read({ 'x-postern-metadata': '=?UTF-8?Q?=7B=22client=22=3A=22a?= =?UTF-8?Q?b=22=7D?=' }).fields,
  { metadata: { client: 'ab' } },
  'RFC 2047 encoded words, as nodemailer writes long values',
);
for (const [headers, path, message] of [
  [{ 'x-postern-metadata': '{oops' }, 'X-Postern-Metadata', /JSON object/],
  [{ 'x-postern-metadata': '[1, 2]' }, 'X-Postern-Metadata', /JSON object/],
  [{ 'x-postern-vars': '{}' }, 'X-Postern-Vars', /only with X-Postern-Template/],
  [{ 'x-postern-template': 't', 'x-postern-vars': 'nope' }, 'X-Postern-Vars', /JSON object/],
  [{ 'x-postern-track': 'opens' }, 'X-Postern-Track', /workspace setting/],
] as const) {
  t.match(read(headers).issues, [{ path, message }], `${JSON.stringify(headers)}: ${path} refused`);
}

t.equal(decodeWords('plain text'), 'plain text');
t.equal(decodeWords('=?utf-8?B?WsO2w6s=?='), 'Zöë');
t.equal(decodeWords('=?iso-8859-1?q?caf=E9_cr=E8me?='), 'café crème');
t.equal(decodeWords('a =?utf-8?q?b?= c'), 'a b c', 'text around words keeps its spaces');
t.equal(decodeWords('=?x-unknown?q?b?='), '=?x-unknown?q?b?=', 'an unknown charset is left as written');
