// The Received header, table-driven (RFC 5321 4.4).
import t from 'tap';
import { protocolOf, receivedHeader } from '../../src/smtp/trace.js';

const date = new Date('2026-01-02T10:00:00Z');
const base = {
  helo: 'client.example.org',
  ip: '192.0.2.7',
  rdns: null,
  protocol: 'ESMTP',
  id: 'abc-1',
  recipients: ['in@acme.example'],
  hostname: 'mx.postern.test',
  date,
};

t.test('Received header', async (t) => {
  for (const [name, over, want] of [
    [
      'one recipient, no reverse DNS',
      {},
      'Received: from client.example.org ([192.0.2.7])\r\n\tby mx.postern.test (Postern) with ESMTP id abc-1\r\n\tfor <in@acme.example>; Fri, 02 Jan 2026 10:00:00 +0000\r\n',
    ],
    [
      'reverse DNS and TLS',
      { rdns: 'mail.example.org', protocol: 'ESMTPS' },
      'Received: from client.example.org (mail.example.org [192.0.2.7])\r\n\tby mx.postern.test (Postern) with ESMTPS id abc-1\r\n\tfor <in@acme.example>; Fri, 02 Jan 2026 10:00:00 +0000\r\n',
    ],
    [
      'IPv6, two recipients: no for clause',
      { ip: '2001:db8::7', recipients: ['a@acme.example', 'b@beta.example'] },
      'Received: from client.example.org ([IPv6:2001:db8::7])\r\n\tby mx.postern.test (Postern) with ESMTP id abc-1; Fri, 02 Jan 2026 10:00:00 +0000\r\n',
    ],
    [
      'a HELO name or recipient that cannot stand in a header as it is',
      { helo: 'bad name(', recipients: ['x y@acme.example'], protocol: 'SMTP' },
      'Received: from [192.0.2.7] ([192.0.2.7])\r\n\tby mx.postern.test (Postern) with SMTP id abc-1; Fri, 02 Jan 2026 10:00:00 +0000\r\n',
    ],
  ] as const) {
    t.equal(receivedHeader({ ...base, ...over } as typeof base), want, name);
  }
});

t.test('the protocol of an SMTPUTF8 transaction is RFC 6531’s', async (t) => {
  for (const [type, utf8, want] of [
    ['ESMTP', false, 'ESMTP'],
    ['ESMTPS', false, 'ESMTPS'],
    ['SMTP', false, 'SMTP'],
    ['ESMTP', true, 'UTF8SMTP'],
    ['ESMTPS', true, 'UTF8SMTPS'],
    ['ESMTPA', true, 'UTF8SMTPA'],
    ['ESMTPSA', true, 'UTF8SMTPSA'],
  ] as const)
    t.equal(protocolOf(type, utf8), want, `${type}${utf8 ? ' with SMTPUTF8' : ''}`);
});
