// Failure classification (channels/email/classify.ts) as tables: permanent or temporary on the
// reply's fields, hard bounce (suppress) or not, and the text stored in the message's `error`.
import t from 'tap';
import { classifySmtpError, describeSmtpError, isHardBounce, type SmtpErrorLike } from '../../../src/channels/email/classify.js';

t.test('permanent or temporary, from the fields', async (t) => {
  const cases: [string, SmtpErrorLike, 'permanent' | 'temporary'][] = [
    ['550 at RCPT', { responseCode: 550, command: 'RCPT TO' }, 'permanent'],
    ['500, the lowest 5xx', { responseCode: 500, command: 'DATA' }, 'permanent'],
    ['599, the highest 5xx', { responseCode: 599, command: 'DATA' }, 'permanent'],
    ['554 at DATA', { responseCode: 554, command: 'DATA' }, 'permanent'],
    ['499 is not 5xx', { responseCode: 499, command: 'DATA' }, 'temporary'],
    ['600 is not 5xx', { responseCode: 600, command: 'DATA' }, 'temporary'],
    ['451 at RCPT', { responseCode: 451, command: 'RCPT TO' }, 'temporary'],
    ['421 greeting', { responseCode: 421, command: 'CONN' }, 'temporary'],
    ['connection refused, no code', { code: 'ECONNECTION', command: 'CONN' }, 'temporary'],
    ['timeout', { code: 'ETIMEDOUT' }, 'temporary'],
    ['535 to AUTH PLAIN', { responseCode: 535, command: 'AUTH PLAIN' }, 'temporary'],
    ['534 to AUTH LOGIN', { responseCode: 534, command: 'AUTH LOGIN' }, 'temporary'],
    ['530 to STARTTLS', { responseCode: 530, command: 'STARTTLS' }, 'temporary'],
    ['TLS required but not offered', { code: 'ETLS', responseCode: 550, command: 'EHLO' }, 'temporary'],
    ['message larger than SIZE', { code: 'EMESSAGE', command: 'MAIL FROM' }, 'permanent'],
    ['EMESSAGE at another command', { code: 'EMESSAGE', command: 'DATA' }, 'temporary'],
    ['EMESSAGE with a 4xx code', { code: 'EMESSAGE', command: 'MAIL FROM', responseCode: 452 }, 'temporary'],
    ['another code at MAIL FROM', { code: 'EENVELOPE', command: 'MAIL FROM' }, 'temporary'],
    ['nothing at all', {}, 'temporary'],
  ];
  for (const [name, err, expected] of cases) t.equal(classifySmtpError(err), expected, name);
});

t.test('hard bounce: a permanent failure that names the address', async (t) => {
  const cases: [string, SmtpErrorLike, boolean][] = [
    ['5.1.1 user unknown', { responseCode: 550, command: 'RCPT TO', response: '550 5.1.1 <a@b.example>: user unknown' }, true],
    ['5.1.2 bad destination system', { responseCode: 550, command: 'RCPT TO', response: '550 5.1.2 bad destination' }, true],
    ['5.1.10 null MX (RFC 7505)', { responseCode: 556, command: 'RCPT TO', response: '556 5.1.10 example.net does not accept mail' }, true],
    ['5.2.10 is not 5.2.1', { responseCode: 552, command: 'DATA', response: '552 5.2.10 too many recipients' }, false],
    ['5.2.1 mailbox disabled', { responseCode: 550, command: 'DATA', response: '550 5.2.1 mailbox disabled' }, true],
    ['5.2.2 mailbox full is not the address', { responseCode: 552, command: 'RCPT TO', response: '552 5.2.2 mailbox full' }, false],
    ['5.7.1 policy', { responseCode: 550, command: 'RCPT TO', response: '550 5.7.1 relaying denied' }, false],
    ['5.7.1 content at DATA', { responseCode: 554, command: 'DATA', response: '554 5.7.1 spam' }, false],
    ['4.1.1 is temporary', { responseCode: 450, command: 'RCPT TO', response: '450 4.1.1 try later' }, false],
    ['550 without enhanced code at RCPT', { responseCode: 550, command: 'RCPT TO', response: '550 no such user' }, true],
    ['551 without enhanced code at RCPT', { responseCode: 551, command: 'RCPT TO', response: '551 user not local' }, true],
    ['553 without enhanced code at RCPT', { responseCode: 553, command: 'RCPT TO', response: '553 mailbox name invalid' }, true],
    ['552 without enhanced code at RCPT', { responseCode: 552, command: 'RCPT TO', response: '552 too much mail' }, false],
    ['554 without enhanced code at RCPT', { responseCode: 554, command: 'RCPT TO', response: '554 rejected' }, false],
    ['550 without enhanced code at DATA', { responseCode: 550, command: 'DATA', response: '550 rejected' }, false],
    ['550 without any response text at RCPT', { responseCode: 550, command: 'RCPT TO' }, true],
    ['535 to AUTH is not a bounce', { responseCode: 535, command: 'AUTH PLAIN', response: '535 5.7.8 bad credentials' }, false],
    ['EMESSAGE (too large) is permanent but not the address', { code: 'EMESSAGE', command: 'MAIL FROM' }, false],
    ['an enhanced code inside a word does not count', { responseCode: 550, command: 'DATA', response: '550 x5.1.1 rejected' }, false],
    [
      '5.7.26 (DMARC) at RCPT: policy, two-digit detail',
      { responseCode: 550, command: 'RCPT TO', response: '550 5.7.26 unauthenticated' },
      false,
    ],
    ['a two-digit subject is read as an enhanced code', { responseCode: 550, command: 'RCPT TO', response: '550 5.10.1 no' }, false],
    ['a temporary failure is never a bounce, whatever its code says', { code: 'ETLS', responseCode: 550, command: 'RCPT TO' }, false],
    [
      'a temporary failure is never a bounce, whatever its text says',
      { responseCode: 550, command: 'AUTH PLAIN', response: '550 5.1.1' },
      false,
    ],
    ['a 4-digit detail is not an enhanced code', { responseCode: 550, command: 'DATA', response: '550 5.1.1000 rejected' }, false],
  ];
  for (const [name, err, expected] of cases) t.equal(isHardBounce(err), expected, name);
});

t.test('the stored error text', async (t) => {
  t.equal(describeSmtpError({ response: '550  5.1.1\r\n  user   unknown ' }), '550 5.1.1 user unknown', 'reply, whitespace folded');
  t.equal(describeSmtpError({ response: '550 no', code: 'EENVELOPE' }, 'mx.example'), 'mx.example: 550 no', 'with the host');
  t.equal(describeSmtpError({ code: 'ETIMEDOUT', message: 'Timeout' }), 'ETIMEDOUT: Timeout', 'local error');
  t.equal(describeSmtpError({}), 'ERROR: unknown error', 'nothing known');
  t.equal(describeSmtpError({ command: 'STARTTLS', response: '454 TLS not available' }), 'STARTTLS failed: 454 TLS not available');
  t.equal(
    describeSmtpError({ command: 'AUTH PLAIN', response: '535 5.7.8 no' }, 'relay.example'),
    'relay.example: AUTH PLAIN failed: 535 5.7.8 no',
  );
  t.equal(describeSmtpError({ command: 'RCPT TO', response: '550 no' }), '550 no', 'other commands are not named');
});
