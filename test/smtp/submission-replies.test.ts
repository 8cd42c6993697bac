// The replies of SMTP submission, as a table: each refusal of submission/ and each AppError of the
// accept path becomes one reply, with its enhanced status code; anything else has none (451 4.3.0).
import t from 'tap';
import { AppError, invalidBody } from '../../src/lib/errors.js';
import { queuedReply, refusal, replyFor, submissionVerdict } from '../../src/smtp/replies.js';
import { SubmissionRefused, type Refusal } from '../../src/submission/refusals.js';

const reply = (err: unknown) => {
  const v = submissionVerdict(err);
  return v && replyFor(v);
};

const refusals: [Refusal, number, string | RegExp][] = [
  [{ reason: 'auth-failed', detail: 'invalid or revoked API key' }, 535, '5.7.8 authentication failed: invalid or revoked API key'],
  [{ reason: 'auth-throttled', seconds: 4 }, 454, '4.7.0 too many failed authentications, try again in 4 s'],
  [{ reason: 'sender-not-allowed', address: 'a@b.example', detail: 'nope' }, 550, '5.7.1 <a@b.example>: nope'],
  [{ reason: 'recipient-invalid', address: 'x@localhost' }, 550, /^5\.1\.3 <x@localhost>: /],
  [
    { reason: 'recipient-suppressed', address: 'x@y.example', why: 'hard_bounce' },
    550,
    "5.7.1 <x@y.example>: on the workspace's suppression list (hard_bounce)",
  ],
  [{ reason: 'rate-limited', seconds: 1 }, 451, "4.7.0 the key's send rate limit is exceeded, try again in 1 s"],
  [
    { reason: 'message-invalid', detail: 'subject is required\r\nInjected: 1' },
    554,
    '5.6.0 message refused: subject is required??Injected: 1',
  ],
];
for (const [r, code, message] of refusals) {
  t.match(reply(new SubmissionRefused(r)), { code, message }, r.reason);
}

const errors: [AppError, number, string | RegExp][] = [
  [
    invalidBody([{ path: 'content.subject', message: 'subject is required' }]),
    554,
    '5.6.0 message refused: content.subject: subject is required',
  ],
  [new AppError('not_found', 'template nope not found'), 554, '5.6.0 message refused: template nope not found'],
  [new AppError('plan_limit', 'custom sending domains require a paid plan'), 554, '5.7.1 custom sending domains require a paid plan'],
  [new AppError('quota_exceeded', 'the free plan’s quota is used up'), 451, /^4\.7\.0 the free plan\?s quota is used up$/],
  [new AppError('rate_limited', 'slow down', {}, 3), 451, /try again in 3 s/],
];
for (const [err, code, message] of errors) t.match(reply(err), { code, message }, err.code);

t.equal(submissionVerdict(new AppError('internal', 'boom')), null, 'an internal error has no reply of its own');
t.equal(submissionVerdict(new Error('boom')), null, 'nor does anything else');
t.same(queuedReply(['msg_a', 'msg_b']), { code: 250, message: '2.0.0 Ok: queued as msg_a msg_b' });
t.match(refusal(submissionVerdict(new SubmissionRefused({ reason: 'auth-throttled', seconds: 2 }))!), { responseCode: 454 });
