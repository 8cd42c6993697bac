// What SMTP submission refuses, each with its documented reply (docs/submission.md), and that a
// refused message leaves nothing stored, not even part of it: AUTH before STARTTLS, MAIL before
// AUTH, a wrong password again and again (throttled, exponentially, in the audit log), a revoked
// key, a key without the send scope, a sender on another workspace's domain, suppressed and invalid
// recipients beside good ones, 10,000 RCPTs, a message over SIZE, a client that drops mid-DATA, a
// quota that runs out halfway through the recipients, the same Message-ID again, and the
// X-Postern-* headers. The clients are real (swaks, Python's smtplib); only the client that drops
// mid-DATA is a bare TLS socket, as no client does that on purpose.
import tls from 'node:tls';
import t from 'tap';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { freePort } from '../helpers/ports.js';
import { addVerifiedDomain, startRemoteMx } from '../helpers/smtp-sink.js';
import { compose, smtplib, swaks, type Submitted } from '../helpers/submission-clients.js';
import { until } from '../helpers/until.js';

const MAX_SIZE = 200_000;
const WRONG = `sk_live_${'x'.repeat(43)}`;

/** The messages of a workspace's environment whose metadata names `client`. */
async function messagesOf(d: TestDaemon, key: string, client: string) {
  const r = await d.request('GET', `/v1/messages?limit=200&metadata[client]=${client}`, { key });
  return r.body.data as {
    publicId: string;
    recipient: string;
    status: string;
    metadata: Record<string, unknown>;
    templateSlug: string | null;
    vars: Record<string, unknown>;
    scheduledAt: string | null;
  }[];
}

for (const db of testDatabases()) {
  t.test(`submission refusals on ${db}`, async (t) => {
    const mx = await startRemoteMx(t, { domains: ['example.net'] });
    const d = await bootDaemon(t, {
      db,
      env: {
        ...mx.env,
        POSTERN_SUBMISSION_ENABLED: 'true',
        POSTERN_SUBMISSION_TLS_PORT: String(await freePort()),
        POSTERN_SMTP_MAX_SIZE_BYTES: String(MAX_SIZE),
        POSTERN_PLANS_STARTER_MESSAGES_PER_MONTH: '2',
      },
    });
    const acme = await d.workspace('acme', { plan: 'pro' });
    const other = await d.workspace('other', { plan: 'pro' });
    const small = await d.workspace('small', { plan: 'starter' });
    for (const [ws, domain] of [
      [acme, 'acme.example'],
      [other, 'other.example'],
      [small, 'small.example'],
    ] as const) {
      mx.dns.set(`postern._domainkey.${domain}`, [{ type: 'TXT', data: await addVerifiedDomain(d.app, ws.id, domain) }]);
    }
    const port = d.submissionPort!;
    const tlsPort = d.submissionTlsPort!;

    const message = (client: string, over: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
      compose({
        from: 'app@acme.example',
        to: 'one@example.net',
        subject: `From ${client}`,
        text: 'hello',
        headers: { 'X-Postern-Metadata': JSON.stringify({ client }), ...headers },
        ...over,
      });
    const submission = async (client: string, over: Partial<Submitted> = {}): Promise<Submitted> => ({
      user: 'apikey',
      password: acme.test,
      from: 'app@acme.example',
      to: [`one.${client}@example.net`],
      raw: await message(client),
      ...over,
    });

    t.test('AUTH before STARTTLS, and MAIL before AUTH, are refused', async (t) => {
      const clear = await swaks(port, await submission('clear'), { tls: 'none', auth: 'PLAIN' });
      t.match(clear.stdout, /<\*\* 538 5\.7\.0 .*STARTTLS/, 'AUTH in clear text: 538 5.7.0, must issue STARTTLS first');
      t.notMatch(clear.stdout, /235/, 'never authenticated');
      const py = await smtplib(port, await submission('clear-py'), { tls: 'none' });
      t.match(py.login, [538], 'smtplib too');
      const anonymous = await swaks(port, await submission('anonymous'), { tls: 'starttls', auth: null });
      t.match(anonymous.stdout, /<~\* 530 5\.7\.0 authentication required/, 'no relay without AUTH: MAIL FROM gets 530 5.7.0');
      t.equal((await messagesOf(d, acme.test, 'anonymous')).length, 0, 'nothing stored');
    });

    t.test('a wrong password again and again is throttled, exponentially, and audited', async (t) => {
      const as = (password: string) => submission('throttle', { user: 'acme', password });
      for (let i = 1; i <= 5; i++) {
        // One mechanism each time: smtplib's login() tries LOGIN after a refused PLAIN, two failures.
        const r = await smtplib(port, await as(WRONG), { tls: 'starttls', mechanism: i % 2 ? 'PLAIN' : 'LOGIN' });
        t.match(r.login, [535, /^5\.7\.8 authentication failed: invalid or revoked API key/], `failure ${i}: 535 5.7.8`);
      }
      // Each attempt with one mechanism: smtplib's login() would try LOGIN after a refused PLAIN.
      let r = await smtplib(port, await as(acme.test), { tls: 'starttls', mechanism: 'PLAIN' });
      t.match(r.login, [454, /^4\.7\.0 too many failed authentications, try again in 1 s/], 'then even the right key waits: 454 4.7.0');
      d.clock.advance(1_000);
      r = await smtplib(port, await as(acme.test), { tls: 'starttls', mechanism: 'PLAIN' });
      t.match(r.login, [235], 'after the wait, the right key works');
      t.match(r.data, [250]);
      r = await smtplib(port, await as(WRONG), { tls: 'starttls', mechanism: 'PLAIN' });
      t.match(r.login, [535], 'a sixth failure');
      r = await smtplib(port, await as(acme.test), { tls: 'starttls', mechanism: 'PLAIN' });
      t.match(r.login, [454, /try again in 2 s/], 'doubles the wait');
      d.clock.advance(1_000);
      r = await smtplib(port, await as(acme.test), { tls: 'starttls', mechanism: 'PLAIN' });
      t.match(r.login, [454, /try again in 1 s/], 'one second later, still waiting');
      d.clock.advance(1_000);
      r = await smtplib(port, await as(acme.test), { tls: 'starttls', mechanism: 'PLAIN' });
      t.match(r.login, [235], 'two seconds later, in');
      const other = await smtplib(port, await submission('throttle-other'), { tls: 'starttls' });
      t.match(other.login, [235], 'another user name from the same address is not held up (20 failures per address)');
      const audit = await d.app.audit.list({ operator: 'acme' });
      const outcomes = audit.data.filter((e) => e.action === 'smtp.auth').map((e) => e.outcome);
      t.equal(outcomes.filter((o) => o === 'failed: invalid or revoked API key').length, 6, 'every failure is in the audit log');
      t.equal(outcomes.filter((o) => o === 'throttled').length, 3, 'and every attempt the throttle turned away');
      t.match(audit.data[0], { operator: { id: null, email: 'acme' }, ip: /127\.0\.0\.1/, target: 'submission' });
    });

    t.test('a revoked key, a key without the send scope, and a user name that is not the key’s', async (t) => {
      const created = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live');
      t.equal((await d.cli('key', 'revoke', created.json.id)).code, 0);
      let r = await smtplib(port, await submission('revoked', { password: created.json.secret }), { tls: 'starttls' });
      t.match(r.login, [535, /invalid or revoked API key/], 'revoked: 535 5.7.8');
      const reader = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read');
      r = await smtplib(tlsPort, await submission('reader', { password: reader.json.secret }), { tls: 'implicit' });
      t.match(r.login, [535, /this key lacks the send scope/], 'no send scope: 535 5.7.8');
      r = await smtplib(port, await submission('other-user', { user: 'other' }), { tls: 'starttls' });
      t.match(r.login, [535, /the user name must be apikey or the key's workspace slug/], "another workspace's slug: 535 5.7.8");
    });

    t.test("a sender on another workspace's domain gets 550 5.7.1, at MAIL FROM or after DATA", async (t) => {
      let r = await smtplib(port, await submission('envelope', { from: 'app@other.example' }), { tls: 'starttls' });
      t.match(r.mail, [
        550,
        '5.7.1 <app@other.example>: the envelope sender other.example is not a verified sending domain of workspace acme',
      ]);
      r = await smtplib(port, await submission('header', { raw: await message('header', { from: 'App <app@other.example>' }) }), {
        tls: 'starttls',
      });
      t.match(r.mail, [250], 'the envelope sender is the workspace’s own');
      t.match(r.data, [
        550,
        '5.7.1 <app@other.example>: the From address other.example is not a verified sending domain of workspace acme',
      ]);
      r = await smtplib(port, await submission('null-sender', { from: '' }), { tls: 'starttls' });
      t.match(r.mail, [550, /5\.7\.1 <>: the envelope sender is empty/], 'the null sender too');
      for (const client of ['envelope', 'header', 'null-sender'])
        t.equal((await messagesOf(d, acme.test, client)).length, 0, `${client}: nothing stored`);
    });

    t.test('a suppressed or invalid recipient gets its own 5xx while the others are accepted', async (t) => {
      t.equal((await d.request('POST', '/v1/suppressions', { key: acme.test, body: { address: 'gone@example.net' } })).status, 201);
      const r = await smtplib(port, await submission('mixed', { to: ['ok.mixed@example.net', 'gone@example.net', 'someone@localhost'] }), {
        tls: 'starttls',
      });
      t.same(r.rcpt, [
        [250, '2.1.5 Accepted'],
        [550, "5.7.1 <gone@example.net>: on the workspace's suppression list (manual)"],
        [550, '5.1.3 <someone@localhost>: not an email address Postern can send to'],
      ]);
      t.match(r.data, [250, /^2\.0\.0 Ok: queued as msg_\w+$/], 'one message, for the accepted recipient');
      t.same(
        (await messagesOf(d, acme.test, 'mixed')).map((m) => m.recipient),
        ['ok.mixed@example.net'],
      );
    });

    t.test('10,000 RCPTs: the first smtp.maxRecipients are taken, the rest told to come back (452 4.5.3)', async (t) => {
      const to = Array.from({ length: 10_000 }, (_, i) => `r${i}@example.net`);
      const r = await smtplib(port, await submission('many', { to }), { tls: 'starttls' });
      t.equal(r.rcpt.filter(([c]) => c === 250).length, 100);
      t.equal(r.rcpt.filter(([c, m]) => c === 452 && /^4\.5\.3 /.test(m)).length, 9_900);
      t.match(r.data, [250]);
      t.equal(r.data![1].split(' ').filter((w) => w.startsWith('msg_')).length, 100, 'one id per accepted recipient');
      t.equal((await messagesOf(d, acme.test, 'many')).length, 100);
    });

    t.test('a message over SIZE gets 552 5.3.4, declared or sent', async (t) => {
      const big = await message('big', { text: 'x'.repeat(MAX_SIZE) });
      const declared = await smtplib(port, await submission('big', { raw: big }), { tls: 'starttls', declareSize: true });
      t.match(declared.mail, [552, /^5\.3\.4 /], 'declared in MAIL FROM SIZE=: refused at once');
      const sent = await swaks(port, await submission('big', { raw: big }), { tls: 'starttls', auth: 'PLAIN', extra: ['--suppress-data'] });
      t.match(
        sent.stdout,
        /<~\* 552 5\.3\.4 (Error: )?message exceeds fixed maximum message size 200000/,
        'sent without SIZE=: refused after DATA',
      );
      t.equal((await messagesOf(d, acme.test, 'big')).length, 0, 'nothing stored');
    });

    t.test('a client that drops mid-DATA leaves nothing stored', async (t) => {
      const raw = (await message('dropped')).toString('latin1');
      const socket = tls.connect({ host: '127.0.0.1', port: tlsPort, rejectUnauthorized: false });
      let seen = '';
      socket.on('data', (c: Buffer) => (seen += c.toString()));
      socket.on('error', () => {});
      await until('the greeting', () => seen.includes('220 '));
      const auth = Buffer.from(`\0apikey\0${acme.test}`).toString('base64');
      socket.write(`EHLO client\r\nAUTH PLAIN ${auth}\r\n`);
      await until('AUTH accepted', () => seen.includes('235 '));
      socket.write('MAIL FROM:<app@acme.example>\r\nRCPT TO:<one.dropped@example.net>\r\nDATA\r\n');
      await until('the go-ahead for the message', () => seen.includes('354 '));
      socket.write(raw.slice(0, Math.floor(raw.length / 2)));
      socket.destroy();
      // The listener goes on serving: the next message is stored, the dropped one is not.
      const after = await smtplib(tlsPort, await submission('after-drop'), { tls: 'implicit' });
      t.match(after.data, [250]);
      t.equal((await messagesOf(d, acme.test, 'after-drop')).length, 1);
      t.equal((await messagesOf(d, acme.test, 'dropped')).length, 0, 'nothing of the dropped message');
    });

    t.test('a quota that runs out halfway through the recipients refuses them all', async (t) => {
      const as = { user: 'small', password: small.live, from: 'app@small.example' };
      const raw = await message('quota', { from: 'app@small.example' });
      let r = await smtplib(port, await submission('quota', { ...as, raw, to: ['a@example.net', 'b@example.net', 'c@example.net'] }), {
        tls: 'starttls',
      });
      t.match(r.data, [451, /^4\.7\.0 the starter plan's quota of 2 messages per month is used up/]);
      t.equal((await messagesOf(d, small.live, 'quota')).length, 0, 'not two of three: none');
      r = await smtplib(port, await submission('quota', { ...as, raw, to: ['a@example.net', 'b@example.net'] }), { tls: 'starttls' });
      t.match(r.data, [250], 'two fit');
      t.equal((await messagesOf(d, small.live, 'quota')).length, 2);
    });

    t.test('the same Message-ID again within 24 hours answers with the same ids and stores nothing new', async (t) => {
      const raw = await message('again', { messageId: '<again-1@acme.example>' });
      const s = await submission('again', { raw, to: ['a.again@example.net', 'b.again@example.net'] });
      const first = await smtplib(port, s, { tls: 'starttls' });
      const second = await smtplib(tlsPort, s, { tls: 'implicit' });
      t.match(first.data, [250]);
      t.same(second.data, first.data, 'the same reply, the same ids');
      t.equal((await messagesOf(d, acme.test, 'again')).length, 2);
      d.clock.advance(24 * 3600_000 + 1_000);
      const later = await smtplib(port, s, { tls: 'starttls' });
      t.notSame(later.data, first.data, 'a day later it is a new message');
      t.equal((await messagesOf(d, acme.test, 'again')).length, 4);
    });

    t.test('X-Postern-* headers: metadata, schedule and template are read; tracking is refused; none is delivered', async (t) => {
      const at = new Date(d.clock.now().getTime() + 3_600_000).toISOString();
      let r = await smtplib(
        port,
        await submission('scheduled', { raw: await message('scheduled', {}, { 'X-Postern-Scheduled-At': at }) }),
        { tls: 'starttls' },
      );
      t.match(r.data, [250]);
      t.match(await messagesOf(d, acme.test, 'scheduled'), [{ status: 'scheduled', scheduledAt: at }]);

      t.equal((await d.request('POST', '/v1/templates', { key: acme.live, body: { slug: 'welcome', channel: 'email' } })).status, 201);
      const draft = { content: { subject: 'Welcome {{name}}', text: 'Hi {{name}}' } };
      t.equal((await d.request('PUT', '/v1/templates/welcome/draft', { key: acme.live, body: draft })).status, 200);
      const headers = { 'X-Postern-Template': 'welcome', 'X-Postern-Vars': JSON.stringify({ name: 'Zoë' }) };
      r = await smtplib(port, await submission('template', { raw: await message('template', {}, headers) }), { tls: 'starttls' });
      t.match(r.data, [250]);
      t.match(await messagesOf(d, acme.test, 'template'), [{ templateSlug: 'welcome', vars: { name: 'Zoë' } }]);

      r = await smtplib(port, await submission('tracked', { raw: await message('tracked', {}, { 'X-Postern-Track': 'opens,clicks' }) }), {
        tls: 'starttls',
      });
      t.match(r.data, [554, /^5\.6\.0 message refused: X-Postern-Track is not supported/]);
      r = await smtplib(port, await submission('badjson', { raw: await message('badjson', {}, { 'X-Postern-Metadata': '{oops' }) }), {
        tls: 'starttls',
      });
      t.match(r.data, [554, /^5\.6\.0 message refused: X-Postern-Metadata must be a JSON object/]);
      r = await smtplib(port, await submission('nosubject', { raw: await message('nosubject', { subject: '' }) }), { tls: 'starttls' });
      t.match(r.data, [554, /^5\.6\.0 message refused: content\.subject: /], 'what the accept path refuses, with its reason');
    });
  });

  t.test(`one send budget per key, whether it sends over HTTP or SMTP, on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_SUBMISSION_ENABLED: 'true', POSTERN_RATE_LIMIT_SEND: '1' } });
    const ws = await d.workspace('acme', { plan: 'pro' });
    await addVerifiedDomain(d.app, ws.id, 'acme.example');
    const s: Submitted = {
      user: 'apikey',
      password: ws.test,
      from: 'app@acme.example',
      to: ['a@example.net'],
      raw: await compose({ from: 'app@acme.example', to: 'a@example.net', subject: 'x', text: 'x' }),
    };
    const first = await smtplib(d.submissionPort!, s, { tls: 'starttls' });
    t.match(first.data, [250], 'the budget’s one send this second');
    const second = await smtplib(d.submissionPort!, s, { tls: 'starttls' });
    t.match(second.mail, [451, /^4\.7\.0 the key's send rate limit is exceeded, try again in 1 s/]);
    const api = await d.request('POST', '/v1/send-raw', {
      key: ws.test,
      body: { channel: 'email', to: 'a@example.net', content: { subject: 'x', text: 'x' } },
    });
    t.equal(api.status, 429, 'and the API finds the same budget spent');
    d.clock.advance(1_000);
    t.match((await smtplib(d.submissionPort!, s, { tls: 'starttls' })).data, [250], 'a second later, room again');
  });
}
