// Failure classification (channels/email/classify.ts) as tables: permanent or temporary on the
// reply's fields, hard bounce (suppress) or not, and the text stored in the message's `error`.
import t from 'tap';
import type { BounceRules } from '../../../src/channels/email/bounce-rules.js';
import {
  classifySmtpError,
  describeSmtpError,
  isHardBounce,
  judge,
  type SmtpErrorLike,
  type Verdict,
} from '../../../src/channels/email/classify.js';

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

// judge() on the codes alone: the category of a failure no rule names, from its enhanced status
// code or its kind, with whether it ends the message and suppresses the address.
t.test('judge without rules: the category from the enhanced code or the kind of failure', async (t) => {
  const cases: [string, SmtpErrorLike, Verdict['category'], boolean, boolean][] = [
    ['5.1.1 unknown user', { responseCode: 550, response: '550 5.1.1 no such user', command: 'RCPT TO' }, 'unknown_user', true, true],
    [
      '4.1.1 unknown user, temporary',
      { responseCode: 450, response: '450 4.1.1 try later', command: 'RCPT TO' },
      'unknown_user',
      false,
      false,
    ],
    ['5.1.2 bad domain', { responseCode: 550, response: '550 5.1.2 bad destination system', command: 'RCPT TO' }, 'dns', true, true],
    ['5.1.10 null MX', { responseCode: 556, response: '556 5.1.10 domain accepts no mail', command: 'RCPT TO' }, 'dns', true, true],
    ['5.1.3 is not 5.1.1', { responseCode: 553, response: '553 5.1.3 bad address syntax', command: 'RCPT TO' }, 'other', true, true],
    ['5.1.11 is not 5.1.1', { responseCode: 550, response: '550 5.1.11 something', command: 'RCPT TO' }, 'other', true, true],
    ['5.2.2 mailbox full', { responseCode: 552, response: '552 5.2.2 mailbox full', command: 'RCPT TO' }, 'mailbox_full', true, false],
    ['4.2.2 mailbox full', { responseCode: 452, response: '452 4.2.2 over quota', command: 'RCPT TO' }, 'mailbox_full', false, false],
    ['5.2.20 is not 5.2.2', { responseCode: 552, response: '552 5.2.20 x', command: 'RCPT TO' }, 'other', true, false],
    ['4.4.7 routing', { responseCode: 451, response: '451 4.4.7 delivery time expired', command: 'DATA' }, 'dns', false, false],
    ['5.7.1 policy', { responseCode: 554, response: '554 5.7.1 rejected by policy', command: 'DATA' }, 'policy', true, false],
    ['4.7.0 policy, temporary', { responseCode: 421, response: '421 4.7.0 try again later', command: 'MAIL FROM' }, 'policy', false, false],
    ['x.7.1 needs 4 or 5 first', { responseCode: 550, response: '550 2.7.1 odd', command: 'DATA' }, 'other', true, false],
    ['no enhanced code', { responseCode: 550, response: '550 go away', command: 'DATA' }, 'other', true, false],
    ['STARTTLS refused', { responseCode: 454, response: '454 4.7.0 TLS not available', command: 'STARTTLS' }, 'tls', false, false],
    ['TLS failed', { code: 'ETLS', response: 'certificate expired' }, 'tls', false, false],
    ['DANE failed', { code: 'EDANE', response: 'no TLSA match' }, 'tls', false, false],
    ['connection refused', { code: 'ECONNREFUSED' }, 'connection', false, false],
    ['connection reset', { code: 'ECONNRESET' }, 'connection', false, false],
    ['timed out', { code: 'ETIMEDOUT' }, 'connection', false, false],
    ['socket error', { code: 'ESOCKET' }, 'connection', false, false],
    ['DNS failure', { code: 'EDNS' }, 'connection', false, false],
    ['connection error', { code: 'ECONNECTION' }, 'connection', false, false],
    ['a code that is not a network one', { code: 'EMESSAGE' }, 'other', false, false],
    ['a network code inside another', { code: 'XETIMEDOUT' }, 'other', false, false],
    ['ECONN inside another', { code: 'NO_ECONNRESET' }, 'other', false, false],
    [
      'a network code beside a reply',
      { code: 'ECONNECTION', responseCode: 421, response: '421 closing', command: 'CONN' },
      'other',
      false,
      false,
    ],
    ['no code at all', {}, 'other', false, false],
  ];
  for (const [what, err, category, permanent, suppress] of cases) {
    t.same(judge(err, null), { permanent, suppress, category, rule: null }, what);
  }
});

t.test('judge with rules: replies the rules decide, and failures they never do', async (t) => {
  // A rule set that would match anything with a reply code: what it does not decide is left to the codes.
  const everything: BounceRules = {
    file: 'test',
    match: () => ({ name: 'everything', text: /./, action: 'defer', category: 'greylisted' }),
  };
  const decided = judge({ responseCode: 550, response: '550 5.1.1 no such user', command: 'RCPT TO' }, everything);
  t.same(
    decided,
    { permanent: false, suppress: false, category: 'greylisted', rule: 'everything' },
    'a reply a rule names: the rule decides',
  );
  const hard: BounceRules = { file: 'test', match: () => ({ name: 'hard', action: 'hard', category: 'spam' }) };
  t.same(judge({ responseCode: 421, response: '421 x', command: 'DATA' }, hard), {
    permanent: true,
    suppress: true,
    category: 'spam',
    rule: 'hard',
  });
  const soft: BounceRules = { file: 'test', match: () => ({ name: 'soft', action: 'soft', category: 'policy' }) };
  t.same(judge({ responseCode: 421, response: '421 x', command: 'DATA' }, soft), {
    permanent: true,
    suppress: false,
    category: 'policy',
    rule: 'soft',
  });
  t.same(
    judge({ responseCode: 550, response: '550 5.1.1 no such user', command: 'RCPT TO' }, { file: 'test', match: () => null }),
    { permanent: true, suppress: true, category: 'unknown_user', rule: null },
    'a reply no rule names: the codes decide',
  );
  const seen: unknown[] = [];
  const watching: BounceRules = {
    file: 'test',
    match: (reply) => {
      seen.push(reply);
      return null;
    },
  };
  judge({ responseCode: 550, response: '550 5.7.1 blocked', command: 'DATA' }, watching);
  judge({ responseCode: 550, command: 'RCPT TO' }, watching);
  t.same(
    seen,
    [
      { code: 550, status: '5.7.1', text: '550 5.7.1 blocked' },
      { code: 550, status: undefined, text: '' },
    ],
    'the rules see the code, the enhanced status and the text (empty when there is none)',
  );
  for (const [what, err] of [
    ['AUTH', { responseCode: 535, response: '535 5.7.8 bad credentials', command: 'AUTH PLAIN' }],
    ['AUTH LOGIN', { responseCode: 535, response: '535 5.7.8 bad credentials', command: 'AUTH LOGIN' }],
    ['STARTTLS', { responseCode: 554, response: '554 5.7.0 no TLS for you', command: 'STARTTLS' }],
    ['a failure without a reply code', { code: 'ETIMEDOUT', response: 'timed out', command: 'CONN' }],
  ] as [string, SmtpErrorLike][]) {
    const v = judge(err, everything);
    t.equal(v.rule, null, `${what}: never the rules' to decide`);
    t.same(v, judge(err, null), `${what}: judged as without rules`);
  }
  t.equal(
    judge({ responseCode: 550, response: '550 5.1.1 x' }, everything).rule,
    'everything',
    'a reply without a command is the rules’ to decide',
  );
});
