// The bounce rules file (docs/email-delivery.md, "Bounce rules"): the shipped rules judge the replies
// big receivers really send; an operator's file is read again when it changes, a broken one keeps
// the rules in force, and one broken at start stops `postern serve` with exit code 2.
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadBounceRules } from '../../../src/channels/email/bounce-rules.js';
import { judge } from '../../../src/channels/email/classify.js';
import { ConfigError } from '../../../src/config.js';
import { ManualClock } from '../../helpers/clock.js';
import { runBin } from '../../helpers/run-bin.js';
import { sqliteOnly } from '../../helpers/databases.js';

sqliteOnly(
  'the bounce rules file, judged in memory and read from disk (a broken one stops `serve` before any database opens); nothing stored is read',
);

const reply = (responseCode: number, response: string) => ({ responseCode, response: `${responseCode} ${response}`, command: 'RCPT TO' });

t.test('the shipped rules on real-world replies', async (t) => {
  const rules = loadBounceRules('');
  const cases: [number, string, { permanent: boolean; suppress: boolean; category: string }][] = [
    [
      550,
      "5.1.1 The email account that you tried to reach does not exist. Please try double-checking the recipient's email address",
      { permanent: true, suppress: true, category: 'unknown_user' },
    ],
    [552, '5.2.2 The email account that you tried to reach is over quota', { permanent: true, suppress: false, category: 'mailbox_full' }],
    [452, '4.2.2 The email account that you tried to reach is over quota', { permanent: false, suppress: false, category: 'mailbox_full' }],
    [
      421,
      '4.7.28 Gmail has detected an unusual rate of unsolicited mail originating from your IP address',
      { permanent: false, suppress: false, category: 'rate_limited' },
    ],
    [
      421,
      '4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints',
      { permanent: false, suppress: false, category: 'rate_limited' },
    ],
    // Throttling answers (the category that lowers a destination's rate, adaptive-backoff.ts).
    [421, '4.7.0 Try again later, closing connection. (EHLO) x-gsmtp', { permanent: false, suppress: false, category: 'rate_limited' }],
    [
      451,
      '4.7.650 The mail server [192.0.2.1] has been temporarily rate limited due to IP reputation.',
      { permanent: false, suppress: false, category: 'rate_limited' },
    ],
    [451, '4.7.500 Server busy. Please try again later from [192.0.2.1].', { permanent: false, suppress: false, category: 'rate_limited' }],
    [421, 'Too many connections from your IP, try again later', { permanent: false, suppress: false, category: 'rate_limited' }],
    [450, '4.7.1 Client host rejected: slow down', { permanent: false, suppress: false, category: 'rate_limited' }],
    [421, '4.3.2 Service shutting down, closing transmission channel', { permanent: false, suppress: false, category: 'rate_limited' }],
    [550, '5.7.606 Access denied, banned sending IP [192.0.2.1]', { permanent: true, suppress: false, category: 'policy' }],
    [550, "5.7.1 Unfortunately, messages from [192.0.2.1] weren't sent. (S3150)", { permanent: true, suppress: false, category: 'policy' }],
    [
      554,
      '5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org',
      { permanent: true, suppress: false, category: 'policy' },
    ],
    [
      550,
      "5.7.26 Unauthenticated email from example.com is not accepted due to domain's DMARC policy",
      { permanent: true, suppress: false, category: 'policy' },
    ],
    [554, '5.7.1 Message rejected as spam', { permanent: true, suppress: false, category: 'spam' }],
    [451, '4.7.1 Greylisted, please try again in 300 seconds', { permanent: false, suppress: false, category: 'greylisted' }],
    [530, '5.7.0 Must issue a STARTTLS command first', { permanent: false, suppress: false, category: 'tls' }],
    [550, 'Requested action not taken: mailbox unavailable (no such user)', { permanent: true, suppress: true, category: 'unknown_user' }],
    [451, '4.4.3 Temporary DNS failure', { permanent: false, suppress: false, category: 'dns' }],
    [503, 'bad sequence of commands', { permanent: true, suppress: false, category: 'other' }],
  ];
  for (const [code, text, expected] of cases) t.match(judge(reply(code, text), rules), expected, `${code} ${text}`);
  t.match(judge({ code: 'ECONNECTION', message: 'connect ECONNREFUSED' }, rules), { permanent: false, category: 'connection', rule: null });
  t.match(judge({ code: 'EDANE', message: 'DANE: no TLSA record matches' }, rules), { permanent: false, category: 'tls' });
});

t.test("an operator's file: read again when it changes; a broken one keeps the rules in force", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-rules-'));
  const file = path.join(dir, 'bounces.json');
  const write = (rules: unknown[], at: number) => {
    writeFileSync(file, JSON.stringify({ rules }));
    utimesSync(file, at, at);
  };
  write([{ name: 'x', status: '5.1.1', action: 'hard', category: 'unknown_user' }], 1_000_000);
  const errors: string[] = [];
  const log = { info: () => {}, error: (o: object, msg: string) => void errors.push(msg) } as never;
  const clock = new ManualClock();
  const rules = loadBounceRules(file, log, clock);
  t.match(judge(reply(550, '5.1.1 nope'), rules), { suppress: true, rule: 'x' });
  // Softer now: an operator decides 5.1.1 from this receiver is not worth suppressing.
  write([{ name: 'y', status: '5.1.1', action: 'soft', category: 'unknown_user' }], 2_000_000);
  clock.advance(999);
  t.match(judge(reply(550, '5.1.1 nope'), rules), { rule: 'x' }, 'looked at no more than once a second');
  clock.advance(1);
  t.match(judge(reply(550, '5.1.1 nope'), rules), { permanent: true, suppress: false, rule: 'y' }, 'the new file applies');
  writeFileSync(file, '{"rules": [{"name": "z", "action": "sideways"}]');
  utimesSync(file, 3_000_000, 3_000_000);
  clock.advance(1000);
  t.match(judge(reply(550, '5.1.1 nope'), rules), { rule: 'y' }, 'a broken file keeps the rules in force');
  t.match(errors, [/bounce rules not reloaded/]);
  t.throws(() => loadBounceRules(path.join(dir, 'missing.json')), ConfigError);
  writeFileSync(file, JSON.stringify({ rules: [{ name: 'bad', text: '(', action: 'hard', category: 'spam' }] }));
  t.throws(() => loadBounceRules(file), { message: /rules\.0\.text: must be a valid regular expression/ });
  writeFileSync(file, JSON.stringify({ rules: [{ name: 'empty', action: 'hard', category: 'spam' }] }));
  t.throws(() => loadBounceRules(file), { message: /must match on code, status or text/ });

  const serve = await runBin(['serve'], {
    env: {
      POSTERN_DATA_DIR: dir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_METRICS_PORT: '0',
      POSTERN_DELIVERY_BOUNCE_RULES: file,
    },
  });
  t.equal(serve.code, 2, 'a broken file at start is a setting to fix');
  t.match(serve.stderr, /delivery\.bounceRules/);
});

t.test("a rule file's fields: what each accepts, and what a rule of each kind matches", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-rules-'));
  const file = path.join(dir, 'bounces.json');
  const load = (rule: Record<string, unknown>) => {
    writeFileSync(file, JSON.stringify({ rules: [{ name: 'r', action: 'hard', category: 'policy', ...rule }] }));
    return loadBounceRules(file);
  };
  const refused = (rule: Record<string, unknown>, message: string) =>
    t.throws(
      () => load(rule),
      { message: new RegExp(`rules\\.0\\.${Object.keys(rule)[0]}: ${message.replace(/[.]/g, '\\.')}$`) },
      JSON.stringify(rule),
    );
  const codeMessage = 'must be a reply code or its first digits, such as 550 or 4';
  for (const code of ['550', '55', '5', '4', '2']) t.doesNotThrow(() => load({ code }), `code ${code}`);
  for (const code of ['3', 'a550', '5501', '55x', '']) refused({ code }, codeMessage);
  const statusMessage = 'must be an enhanced status code or its prefix, such as 5.1.1 or 5.7.';
  for (const status of ['5', '5.', '5.1', '5.7.', '5.1.1', '4.12.3', '5.7.', '2.0.0'])
    t.doesNotThrow(() => load({ status }), `status ${status}`);
  for (const status of ['x5.1.1', '5.1.1x', '6.1.1', '5..1', '5.1234']) refused({ status }, statusMessage);
  refused({ text: '(' }, 'must be a valid regular expression');
  t.doesNotThrow(() => load({ code: '421' }), 'a rule may match on the code alone');
  t.doesNotThrow(() => load({ text: 'over quota' }), 'or the text alone');
  writeFileSync(file, '[]');
  t.throws(() => loadBounceRules(file), { message: /: the file: / }, 'a file that is not an object is named as the file');

  const matchOf = (rule: Record<string, unknown>, r: { code?: number; status?: string; text?: string }) =>
    load(rule).match({ text: '', ...r }) !== null;
  t.ok(matchOf({ code: '5' }, { code: 550 }), 'a code prefix');
  t.notOk(matchOf({ code: '421' }, { code: 550 }), 'another code');
  t.notOk(matchOf({ code: '4' }, { text: 'connect ECONNREFUSED' }), 'a code rule never matches a reply without one');
  t.ok(matchOf({ status: '5.7.' }, { status: '5.7.26' }), 'a status prefix ends with a dot');
  t.notOk(matchOf({ status: '5.7.' }, { status: '5.1.1' }));
  t.notOk(matchOf({ status: '5.7.' }, { text: '5.7.1 no status parsed' }), 'a status rule never matches a reply without one');
  t.ok(matchOf({ status: '5.1.1' }, { status: '5.1.1' }), 'a whole status');
  t.notOk(matchOf({ status: '5.1.1' }, { status: '5.1.10' }), 'is matched whole, not as a prefix');
  t.ok(matchOf({ text: 'OVER quota' }, { text: 'mailbox over QUOTA' }), 'text is a case-insensitive pattern');
  t.notOk(matchOf({ code: '5', text: 'quota' }, { code: 550, text: 'no such user' }), 'every field given must match');
});

t.test('the enhanced status code in a reply text', async (t) => {
  const { enhancedStatusOf } = await import('../../../src/channels/email/bounce-rules.js');
  t.equal(enhancedStatusOf('550 5.7.26 Unauthenticated email'), '5.7.26');
  t.equal(enhancedStatusOf('451 4.12.3 odd but well formed'), '4.12.3');
  t.equal(enhancedStatusOf('250 2.0.0 OK'), '2.0.0');
  t.equal(enhancedStatusOf('550 version 15.1.1 of the software'), undefined, 'not inside a longer number');
  t.equal(enhancedStatusOf('550 no status here'), undefined);
});

t.test('a reload is logged with its rule count; an unchanged file is not read again', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-rules-'));
  const file = path.join(dir, 'bounces.json');
  const write = (rules: unknown[], at: number) => {
    writeFileSync(file, JSON.stringify({ rules }));
    utimesSync(file, at, at);
  };
  const rule = { name: 'x', status: '5.1.1', action: 'hard', category: 'unknown_user' };
  write([rule], 1_000_000);
  const info: unknown[] = [];
  const error: unknown[] = [];
  const log = { info: (o: object) => void info.push(o), error: (o: object) => void error.push(o) } as never;
  const clock = new ManualClock();
  const rules = loadBounceRules(file, log, clock);
  clock.advance(5000);
  rules.match({ code: 550, text: '' });
  t.same(info, [], 'the same file is not reloaded');
  write([rule, { ...rule, name: 'y' }], 2_000_000);
  clock.advance(1000);
  rules.match({ code: 550, text: '' });
  t.same(info, [{ file, rules: 2 }]);
  writeFileSync(file, '{');
  utimesSync(file, 3_000_000, 3_000_000);
  clock.advance(1000);
  rules.match({ code: 550, text: '' });
  t.match(error, [{ file, err: /JSON/ }]);
});
