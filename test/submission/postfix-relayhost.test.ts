// The classic smarthost: a host's own Postfix queues what local programs hand it and relays it to
// Postern's submission port as its `relayhost`, with STARTTLS and SASL (docs/submission.md,
// "Postfix as the relay host"). Debian's Postfix, not a client of ours: the messages it relays become
// one Postern message per recipient, DKIM-signed at the loopback MX; a message Postern refuses with
// a 5xx is bounced by Postfix, not retried.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { postfixUnavailable, startPostfix } from '../helpers/postfix.js';
import { addVerifiedDomain, startRemoteMx } from '../helpers/smtp-sink.js';
import { compose } from '../helpers/submission-clients.js';
import { until } from '../helpers/until.js';
import { startWireChecker } from '../helpers/wire-check.js';

for (const db of testDatabases()) {
  t.test(`Postfix as a relayhost with SASL to Postern's submission port, on ${db}`, async (t) => {
    const unavailable = postfixUnavailable();
    if (unavailable) {
      t.fail(`this test needs a real Postfix: ${unavailable}`);
      return;
    }
    const checker = startWireChecker(t);
    const mx = await startRemoteMx(t, { domains: ['example.net'] });
    const d = await bootDaemon(t, { db, env: { ...mx.env, POSTERN_SUBMISSION_ENABLED: 'true' } });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const txt = await addVerifiedDomain(d.app, ws.id, 'acme.example');
    mx.dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: txt }]);
    checker.publish('postern._domainkey.acme.example', txt);

    const postfix = await startPostfix({
      relayPort: d.submissionPort!,
      settings: [
        'smtp_sasl_auth_enable = yes',
        `smtp_sasl_password_maps = static:apikey:${ws.live}`,
        'smtp_sasl_security_options = noanonymous',
        'smtp_sasl_mechanism_filter = plain, login',
        'smtp_tls_security_level = encrypt',
        'smtputf8_enable = yes',
      ],
    });
    t.teardown(() => postfix.stop());

    const raw = await compose({
      from: 'Cron <cron@acme.example>',
      to: ['ops@example.net', 'zoë@example.net'],
      subject: 'Nightly backup: done',
      text: 'All 3 volumes backed up.\n',
      headers: { 'X-Postern-Metadata': '{"job": "backup"}' },
    });
    await postfix.sendmail(raw, { from: 'cron@acme.example', to: ['ops@example.net', 'zoë@example.net'] });
    const list = await Promise.race([
      postfix.failure(),
      until('both messages delivered', async () => {
        const r = await d.request('GET', '/v1/messages?metadata[job]=backup', { key: ws.live });
        const data = r.body.data as { recipient: string; status: string }[];
        return data.length === 2 && data.every((m) => m.status === 'delivered') && data;
      }),
    ]);
    t.same(list.map((m) => m.recipient).sort(), ['ops@example.net', 'zoë@example.net'], 'one message per recipient');
    t.match(
      postfix.logTail(20),
      /relay=127\.0\.0\.1\[127\.0\.0\.1\]:\d+.*status=sent \(250 2\.0\.0 Ok: queued as msg_/,
      'Postfix saw the 250',
    );
    for (const to of ['ops@example.net', 'zoë@example.net']) {
      const copy = await until(`the copy for ${to}`, () => mx.sink.received.find((r) => r.to.includes(to)));
      const problems = await checker.check(copy.raw, {
        from: { address: 'cron@acme.example', name: 'Cron' },
        to: [to],
        cc: [],
        subject: 'Nightly backup: done',
        text: 'All 3 volumes backed up.\n',
        html: '',
        attachments: [],
        eightBit: true,
        dkimDomain: 'acme.example',
      });
      t.same(problems, [], `the copy for ${to} is whole and signed`);
    }

    // A sender the workspace may not use: Postern answers 550 5.7.1 and Postfix bounces it.
    await postfix.sendmail(await compose({ from: 'root@postfix.postern.test', to: 'ops@example.net', subject: 'x', text: 'x' }), {
      from: 'root@postfix.postern.test',
      to: ['ops@example.net'],
    });
    await until('Postfix bounced the refused message', () =>
      /status=bounced \(host 127\.0\.0\.1\[127\.0\.0\.1\] said: 550 5\.7\.1 <root@postfix\.postern\.test>/.test(postfix.logTail(30)),
    );
  });
}
