// The submission listeners' own series move by exactly what real clients did (Python's smtplib
// over STARTTLS on 587 and implicit TLS on 465): sessions per port, AUTH outcomes, accepted
// messages and their recipients, refusals by reason. promtool checks the exposition.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { promtoolCheck, scrape, total } from '../helpers/metrics.js';
import { freePort } from '../helpers/ports.js';
import { addVerifiedDomain, startRemoteMx } from '../helpers/smtp-sink.js';
import { compose, smtplib, type Submitted } from '../helpers/submission-clients.js';

for (const db of testDatabases()) {
  t.test(`submission metrics count what the clients did, on ${db}`, async (t) => {
    const mx = await startRemoteMx(t);
    const d = await bootDaemon(t, {
      db,
      env: { ...mx.env, POSTERN_SUBMISSION_ENABLED: 'true', POSTERN_SUBMISSION_TLS_PORT: String(await freePort()) },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    mx.dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: await addVerifiedDomain(d.app, ws.id, 'acme.example') }]);
    const raw = await compose({ from: 'app@acme.example', to: 'one@example.net', subject: 'Counted', text: 'hello' });
    const submitted = (over: Partial<Submitted> = {}): Submitted => ({
      user: 'apikey',
      password: ws.test,
      from: 'app@acme.example',
      to: ['one@example.net', 'two@example.net'],
      raw,
      ...over,
    });
    const before = (await scrape(d.metricsPort!)).samples;

    const ok = await smtplib(d.submissionPort!, submitted(), { tls: 'starttls', mechanism: 'PLAIN' });
    t.match(ok.data, [250], 'two recipients accepted');
    const implicit = await smtplib(d.submissionTlsPort!, submitted({ to: ['three@example.net', 'someone@localhost'] }), {
      tls: 'implicit',
      mechanism: 'PLAIN',
    });
    t.match(implicit.rcpt, [[250], [550, /^5\.1\.3 /]], 'one recipient refused as invalid');
    t.match(implicit.data, [250]);
    const wrong = await smtplib(d.submissionPort!, submitted({ password: 'sk_test_wrong' }), { tls: 'starttls', mechanism: 'PLAIN' });
    t.match(wrong.login, [535]);
    const foreign = await smtplib(d.submissionPort!, submitted({ from: 'app@elsewhere.example' }), { tls: 'starttls', mechanism: 'PLAIN' });
    t.match(foreign.mail, [550], 'a sender on a domain the workspace may not send from');

    const { text, samples } = await scrape(d.metricsPort!);
    const delta = (name: string, labels: Record<string, string> = {}) => total(samples, name, labels) - total(before, name, labels);
    t.equal(delta('postern_submission_sessions_total', { port: 'submission' }), 3, 'three connections on 587');
    t.equal(delta('postern_submission_sessions_total', { port: 'submissions' }), 1, 'one on 465');
    t.equal(delta('postern_submission_auth_total', { outcome: 'ok' }), 3);
    t.equal(delta('postern_submission_auth_total', { outcome: 'failed' }), 1);
    t.equal(delta('postern_submission_auth_total', { outcome: 'throttled' }), 0);
    t.equal(delta('postern_submission_accepted_total'), 2, 'two messages');
    t.equal(delta('postern_submission_recipients_total'), 3, 'three sends');
    t.equal(delta('postern_submission_rejected_total', { reason: 'recipient-invalid' }), 1);
    t.equal(delta('postern_submission_rejected_total', { reason: 'auth-failed' }), 1);
    t.equal(delta('postern_submission_rejected_total', { reason: 'sender-not-allowed' }), 1);
    t.equal(delta('postern_submission_rejected_total'), 3, 'and no other refusal');
    t.equal(delta('postern_smtp_sessions_total'), 0, "the MX listener's series do not move");
    const check = await promtoolCheck(text);
    t.equal(check.code, 0, `promtool check metrics: ${check.output}`);
  });
}
