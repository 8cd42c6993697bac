// Pure decisions, table-driven: SMTP failure classification, hard-bounce detection, rate parsing
// and buckets, DSN field parsing, link rewriting and token signing.
import t from 'tap';
import { ManualClock } from '../../helpers/clock.js';
import { isHardDsnStatus, parseDeliveryStatus } from '../../../src/channels/email/bounces.js';
import { classifySmtpError, isHardBounce } from '../../../src/channels/email/classify.js';
import { createDomainRateLimiter, parseRate } from '../../../src/channels/email/rates.js';
import { createBudgets } from '../../../src/cluster/budgets.js';
import { createLogger } from '../../../src/lib/logger.js';
import { addTracking } from '../../../src/channels/email/tracking/rewrite.js';
import { createTokenSigner } from '../../../src/channels/email/tracking/tokens.js';

t.test('classification on reply codes', async (t) => {
  const cases: [object, 'permanent' | 'temporary', boolean][] = [
    [{ responseCode: 550, response: '550 5.1.1 no such user', command: 'RCPT TO' }, 'permanent', true],
    [{ responseCode: 550, response: '550 no such user', command: 'RCPT TO' }, 'permanent', true],
    [{ responseCode: 554, response: '554 5.7.1 spam', command: 'DATA' }, 'permanent', false],
    [{ responseCode: 552, response: '552 5.2.2 mailbox full', command: 'RCPT TO' }, 'permanent', false],
    [{ responseCode: 553, response: '553 5.2.1 mailbox disabled', command: 'RCPT TO' }, 'permanent', true],
    [{ responseCode: 451, response: '451 4.7.1 greylisted', command: 'RCPT TO' }, 'temporary', false],
    [{ responseCode: 421, response: '421 closing', command: 'CONN' }, 'temporary', false],
    [{ code: 'ETIMEDOUT', command: 'CONN' }, 'temporary', false],
    [{ code: 'ECONNREFUSED' }, 'temporary', false],
    [{ code: 'ETLS', command: 'STARTTLS' }, 'temporary', false],
    // STARTTLS refused where the TLS policy requires it: deferred, as Postfix does.
    [{ code: 'ETLS', responseCode: 500, response: '500 Error: command not recognized', command: 'STARTTLS' }, 'temporary', false],
    // Wrong relay credentials: an operator's fix, not the message's fault; Postfix defers too.
    [{ responseCode: 535, response: '535 5.7.8 Error: authentication failed', command: 'AUTH PLAIN', code: 'EAUTH' }, 'temporary', false],
    [
      { responseCode: 534, response: '534 5.7.9 Authentication mechanism is too weak', command: 'AUTH LOGIN', code: 'EAUTH' },
      'temporary',
      false,
    ],
    // Larger than the SIZE the server advertised: nodemailer refuses before MAIL FROM, with no reply
    // code; the server would answer 552 5.3.4, which no retry changes.
    [{ code: 'EMESSAGE', command: 'MAIL FROM', message: 'Message size larger than allowed 1000' }, 'permanent', false],
    [
      { responseCode: 552, response: '552 5.3.4 Message size exceeds fixed maximum message size', command: 'MAIL FROM' },
      'permanent',
      false,
    ],
    [{ responseCode: 552, response: '552 5.3.4 Error: message file too big', command: 'DATA', code: 'EMESSAGE' }, 'permanent', false],
  ];
  for (const [err, cls, hard] of cases) {
    t.equal(classifySmtpError(err), cls, JSON.stringify(err));
    t.equal(isHardBounce(err), hard, `hard? ${JSON.stringify(err)}`);
  }
});

t.test('rates', async (t) => {
  t.same(parseRate('60/min'), { count: 60, perMs: 60_000 });
  t.same(parseRate('5/s'), { count: 5, perMs: 1000 });
  t.throws(() => parseRate('lots'));
  const clock = new ManualClock('2025-01-01T00:00:00Z');
  const rl = createDomainRateLimiter({ 'gmail.com': '2/min' }, createBudgets({ clock, log: createLogger('silent') }));
  t.equal(await rl.take('gmail.com'), 0);
  t.equal(await rl.take('GMAIL.com'), 0);
  t.equal(await rl.take('gmail.com'), 30_000, 'the third waits for the next token');
  t.equal(await rl.take('other.org'), 0, 'unlisted domains are not limited');
  clock.advance(30_000);
  t.equal(await rl.take('gmail.com'), 0);
});

t.test('DSN fields', async (t) => {
  const dsn =
    'Reporting-MTA: dns; mx.example.net\r\n\r\nFinal-Recipient: rfc822; Alice@Example.net\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1\r\n  user unknown\r\n\r\nFinal-Recipient: rfc822;bob@example.net\r\nAction: delayed\r\nStatus: 4.4.1\r\n';
  t.same(parseDeliveryStatus(dsn), [
    { recipient: 'alice@example.net', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' },
    { recipient: 'bob@example.net', action: 'delayed', status: '4.4.1', diagnostic: '' },
  ]);
  for (const [s, hard] of [
    ['5.1.1', true],
    ['5.1.10', true],
    ['5.2.1', true],
    ['5.2.2', false],
    ['5.7.1', false],
    ['4.2.2', false],
  ] as const)
    t.equal(isHardDsnStatus(s), hard, s);
});

t.test('link rewriting', async (t) => {
  const out = addTracking(
    '<html><body><a href="https://a.example/x?y=1&amp;z=2">a</a> <a href=\'mailto:x@y\'>m</a> <a href="#top">t</a> <a href="https://u.example/unsub">u</a></body></html>',
    {
      open: 'https://p/o',
      click: (u) => `https://p/c?u=${encodeURIComponent(u)}`,
      skip: ['https://u.example/unsub'],
    },
  );
  t.match(out, 'href="https://p/c?u=https%3A%2F%2Fa.example%2Fx%3Fy%3D1%26z%3D2"');
  t.match(out, "href='mailto:x@y'");
  t.match(out, 'href="#top"');
  t.match(out, 'href="https://u.example/unsub"');
  t.match(out, /<img src="https:\/\/p\/o"[^>]*\/><\/body>/);
});

t.test('tokens', async (t) => {
  const s = createTokenSigner('k1');
  const tok = s.sign({ k: 'click', m: 'msg_1', u: 'https://a.example/' });
  t.same(s.verify(tok, 'click'), { k: 'click', m: 'msg_1', u: 'https://a.example/' });
  t.equal(s.verify(tok, 'open'), null, 'a token of another kind is refused');
  t.equal(createTokenSigner('k2').verify(tok, 'click'), null, 'another key is refused');
  t.equal(s.verify(tok.slice(0, -2) + 'AA', 'click'), null);
  t.equal(s.verify('garbage', 'click'), null);
});
