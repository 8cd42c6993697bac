// Every message leaves whole: sends generated from every combination the API accepts — inline or
// from a template; text, html or both in any script, line length and line ending; display names,
// cc, bcc and reply-to; hostile attachments; tracking on and off (unsubscribe headers with
// templates); live and test keys; a 7-bit peer and one that offers 8BITMIME and SMTPUTF8; forwards
// of received mail (SRS + ARC) — go through the daemon to loopback MXes, and the bytes that arrive
// are checked by tools Postern did not write (test/helpers/wire-check.ts: Python's `email`,
// dkimpy). Test-mode messages are checked through the dashboard's source view, which must equal
// what delivery sends (it does, for every live message here, but for the Date and so the DKIM
// signature). A sample of the delivered messages is scored by rspamd.
//
// Runs are seeded (fast-check): a failure prints its seed and the shrunk case; FC_SEED replays it,
// FC_RUNS changes how many cases run.
import { createHash, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { contentAsOutput } from '../../src/channels/render.js';
import { renderContent } from '../../src/templates/render.js';
import { attachmentsArb, fromNameArb, htmlArb, subjectArb, textArb } from '../helpers/content-shapes.js';
import { holds } from '../helpers/property.js';
import { bootDaemon } from '../helpers/daemon.js';
import { dashboardLogin } from '../helpers/dashboard.js';
import { testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { createAddress, transport } from '../helpers/inbound.js';
import { startRspamd } from '../helpers/scanners.js';
import { addVerifiedDomain, startSink, type Received } from '../helpers/smtp-sink.js';
import { startWireChecker, type ExpectedMessage } from '../helpers/wire-check.js';
import type { EmailContent, EmailOutput } from '../../src/contract/channels.js';

const RUNS = 200;
const FORWARD_RUNS = 40;

const caseArb = fc.record({
  template: fc.boolean(),
  subject: subjectArb,
  body: fc.constantFrom('text', 'html', 'both'),
  text: textArb,
  html: htmlArb,
  preheader: fc.option(fc.constantFrom('A preview', 'Vorschau – ünïcode', '<b>not html</b>'), { nil: undefined }),
  fromName: fc.option(fromNameArb, { nil: undefined }),
  // One case in eight goes from the default sender, which no workspace here has verified.
  from: fc.constantFrom(true, true, true, true, true, true, true, false),
  cc: fc.constantFrom(0, 0, 1, 2),
  bcc: fc.constantFrom(0, 0, 1),
  replyTo: fc.boolean(),
  attachments: attachmentsArb,
  tracked: fc.boolean(),
  peer: fc.constantFrom('wide', 'wide', 'seven-bit'),
  live: fc.constantFrom(true, true, true, false),
  utf8Recipient: fc.constantFrom(false, false, false, false, true),
});
type Case = typeof caseArb extends fc.Arbitrary<infer C> ? C : never;

/**
 * A message without what differs between a delivery and the source view by design: the Date and
 * DKIM-Signature fields, and the multipart boundaries (random per composition, numbered here).
 */
const comparable = (raw: Buffer) => {
  const text = raw.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  const fields = text.slice(0, end).split(/\r\n(?![ \t])/);
  const seen = new Map<string, string>();
  return `${fields.filter((f) => !/^(date|dkim-signature):/i.test(f)).join('\r\n')}${text.slice(end)}`.replace(
    /--_NmP-[0-9a-f]+-Part_\d+/g,
    (b) => seen.get(b) ?? (seen.set(b, `BOUNDARY${seen.size}`), seen.get(b)!),
  );
};

/** Tracking undone: the open pixel removed and each click link put back, so the html can be held to what was rendered. */
function untracked(html: string, publicUrl: string): string {
  const base = publicUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return html
    .replace(
      new RegExp(`<img src="${base}/t/o/[^"]+" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px" />`),
      '',
    )
    .replace(new RegExp(`"${base}/t/c/([^".]+)\\.[^"]+"`, 'g'), (_, body: string) => {
      const { u } = JSON.parse(Buffer.from(body, 'base64url').toString()) as { u: string };
      return `"${u.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"`;
    });
}

for (const db of testDatabases()) {
  t.test(`every message leaves whole, on the wire, on ${db}`, async (t) => {
    const checker = startWireChecker(t);
    const wide = await startSink(t);
    const narrow = await startSink(t, { host: '127.0.0.2', port: wide.port, sevenBit: true });
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
      'example.org': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.org' } }],
      'mx.example.org': [{ type: 'A', data: '127.0.0.2' }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(wide.port), POSTERN_DELIVERY_IDLE_TIMEOUT: '2s' },
    });
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    const forwarder = d.app.workers.find((w) => w.name === 'forwarder')!;

    // Two workspaces, each with a verified sending domain (its key published for the checkers and
    // rspamd) and three templates; tracking on in one of them.
    const spaces = { plain: await d.workspace('plain', { plan: 'pro' }), tracked: await d.workspace('tracked', { plan: 'pro' }) };
    t.match((await d.cli('tracking', 'enable', '--workspace', 'tracked')).json, { tracking: true });
    for (const [slug, ws] of Object.entries(spaces)) {
      const txt = await addVerifiedDomain(d.app, ws.id, `${slug}.example`);
      dns.set(`postern._domainkey.${slug}.example`, [{ type: 'TXT', data: txt }]);
      checker.publish(`postern._domainkey.${slug}.example`, txt);
      for (const [name, content] of Object.entries({
        text: { subject: '{{subject}}', text: '{{text}}' },
        html: { subject: '{{subject}}', preheader: '{{preheader}}', html: '{{{html}}}' },
        both: { subject: '{{subject}}', preheader: '{{preheader}}', html: '{{{html}}}', text: '{{text}}' },
      })) {
        t.equal((await d.request('POST', '/v1/templates', { key: ws.live, body: { slug: name, channel: 'email' } })).status, 201);
        t.equal((await d.request('PUT', `/v1/templates/${name}/draft`, { key: ws.live, body: { content } })).status, 200);
        t.equal((await d.request('POST', `/v1/templates/${name}/publish`, { key: ws.live })).status, 200);
      }
    }
    const dashboard = await dashboardLogin(d);
    const delivered: Received[] = [];

    /** The source view of a message, as the dashboard downloads it. */
    const sourceOf = async (wsId: string, live: boolean, id: string) => {
      await dashboard.select(wsId, live ? 'live' : 'test');
      const r = await fetch(`${d.url}/dashboard/view/messages/${id}/source.eml`, { headers: { cookie: dashboard.cookie } });
      if (r.status !== 200) throw new Error(`source view: ${r.status} ${await r.text()}`);
      return Buffer.from(await r.arrayBuffer());
    };

    let n = 0;
    const sendOne = async (c: Case): Promise<string[]> => {
      const i = ++n;
      const slug = c.tracked ? 'tracked' : 'plain';
      const ws = spaces[slug];
      const domain = c.peer === 'wide' ? 'example.net' : 'example.org';
      const to = `${c.utf8Recipient ? 'zoë' : 'case'}${i}@${domain}`;
      const cc = Array.from({ length: c.cc }, (_, k) => `cc${k}.${i}@${domain}`);
      const bcc = Array.from({ length: c.bcc }, (_, k) => `bcc${k}.${i}@${domain}`);
      const content: EmailContent = {
        subject: c.subject,
        ...(c.body !== 'html' ? { text: c.text } : {}),
        ...(c.body !== 'text' ? { html: c.html } : {}),
        ...(c.preheader !== undefined && c.body !== 'text' ? { preheader: c.preheader } : {}),
      };
      const vars = { subject: c.subject, text: c.text, html: c.html, preheader: c.preheader ?? '' };
      const body = {
        to,
        ...(c.template ? { template: c.body, vars } : { channel: 'email', content }),
        ...(c.from ? { from: `sender@${slug}.example` } : {}),
        ...(c.fromName !== undefined ? { fromName: c.fromName } : {}),
        ...(cc.length ? { cc } : {}),
        ...(bcc.length ? { bcc } : {}),
        ...(c.replyTo ? { replyTo: `reply@${slug}.example` } : {}),
        ...(c.attachments.length ? { attachments: c.attachments } : {}),
      };
      const sent = await d.request('POST', c.template ? '/v1/send' : '/v1/send-raw', { key: c.live ? ws.live : ws.test, body });
      if (sent.status !== 202) return [`send answered ${sent.status}: ${JSON.stringify(sent.body)}`];
      const id = sent.body.id as string;
      await dispatcher.tick();
      const message = (await d.request('GET', `/v1/messages/${id}`, { key: c.live ? ws.live : ws.test })).body;

      // What Postern rendered is the oracle for the bodies (its renderer has tests of its own): a
      // template is rendered with its variables, inline content goes as written (a text with `{{`
      // in it is not a template: FC_SEED=1795726681 once generated one).
      const rendered = (
        c.template ? renderContent('email', templateContent(c.body), vars).output : contentAsOutput('email', content)
      ) as EmailOutput;
      const expected: ExpectedMessage = {
        from: { address: c.from ? `sender@${slug}.example` : 'postern@mx.postern.test', name: c.fromName ?? '' },
        to: [to],
        cc,
        replyTo: c.replyTo ? `reply@${slug}.example` : null,
        subject: c.subject,
        text: c.body === 'html' ? null : rendered.text,
        html: c.tracked ? null : rendered.html,
        attachments: c.attachments.map((a) => ({
          ...a,
          contentType: /^message\//.test(a.contentType) ? 'application/octet-stream' : a.contentType,
        })),
        eightBit: c.peer === 'wide' || !c.live,
        dkimDomain: c.from ? `${slug}.example` : null,
      };
      const problems: string[] = [];
      const checkTracked = async (raw: Buffer) => {
        if (!c.tracked || c.body === 'text') return;
        const facts = await checker.facts(raw);
        const html = facts.bodies.find((b) => b.type === 'text/html')?.content ?? '';
        if (untracked(html.replace(/\r\n/g, '\n'), d.url).replace(/\n$/, '') !== rendered.html.replace(/\r\n|\r/g, '\n'))
          problems.push(`tracked html is not the rendered html with tracking added`);
      };
      const source = await sourceOf(ws.id, c.live, id);

      if (!c.live) {
        if (message.status !== 'delivered') problems.push(`test-mode message is ${message.status}`);
        problems.push(...(await checker.check(source, expected)).map((p) => `source view: ${p}`));
        await checkTracked(source);
        return problems;
      }
      if (c.peer === 'seven-bit' && c.utf8Recipient) {
        // A UTF-8 address needs SMTPUTF8, which this peer does not offer: failed, never sent.
        if (message.status !== 'failed' || !/SMTPUTF8 is required/.test(message.error ?? ''))
          problems.push(`to a peer without SMTPUTF8: ${message.status} ${message.error}`);
        if ((c.peer === 'seven-bit' ? narrow : wide).received.some((r) => r.to.includes(to))) problems.push('it was sent anyway');
        return problems;
      }
      if (message.status !== 'delivered') return [`message is ${message.status}: ${message.error}`];
      const got = (c.peer === 'wide' ? wide : narrow).received.find((r) => r.to.includes(to));
      if (!got) return ['delivered, but not at the MX'];
      delivered.push(got);
      problems.push(...(await checker.check(got.raw, expected)));
      await checkTracked(got.raw);
      for (const b of bcc) if (!got.to.includes(b)) problems.push(`bcc ${b} not in the envelope`);
      if (c.utf8Recipient && !got.smtpUtf8) problems.push('a UTF-8 address went without SMTPUTF8');
      const [a, b] = [comparable(source), comparable(got.raw)];
      if (a !== b) {
        let at = 0;
        while (a[at] === b[at]) at++;
        problems.push(
          `the source view differs from what was sent at ${at}: ${JSON.stringify(a.slice(at - 60, at + 60))} / ${JSON.stringify(b.slice(at - 60, at + 60))}`,
        );
      }
      return problems;
    };

    await t.test('inline and template sends, live and test', async (t) => {
      await holds(
        t,
        'every generated send leaves whole',
        fc.asyncProperty(caseArb, async (c) => {
          const problems = await sendOne(c);
          if (problems.length) throw new Error(problems.join('\n'));
        }),
        RUNS,
      );
    });

    await t.test('forwards of received mail (SRS + ARC), 7-bit and 8-bit', async (t) => {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const senderTxt = `v=DKIM1; k=rsa; p=${(publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64')}`;
      dns.set('s1._domainkey.sender.example', [{ type: 'TXT', data: senderTxt }]);
      checker.publish('s1._domainkey.sender.example', senderTxt);
      const arc = await d.app.forwarding.arcRecord();
      dns.set(arc.name, [{ type: 'TXT', data: arc.value }]);
      checker.publish(arc.name, arc.value);
      const env = { d, dns, ws: spaces.plain, shared: 'plain.in.postern.test' };
      const addresses = {
        wide: await createAddress(env, { localPart: 'fwd-wide', forwardTo: 'dest@example.net' }),
        narrow: await createAddress(env, { localPart: 'fwd-narrow', forwardTo: 'dest@example.org' }),
      };
      const smtp = transport(d.smtpPort);
      let k = 0;
      await holds(
        t,
        'every generated forward leaves whole',
        fc.asyncProperty(
          fc.record({
            subject: subjectArb,
            text: textArb,
            html: fc.option(htmlArb, { nil: '' }),
            eightBit: fc.boolean(),
            wide: fc.boolean(),
          }),
          async (c) => {
            const marker = `fwd-${++k}-${createHash('sha1').update(String(Math.random())).digest('hex').slice(0, 8)}`;
            const address = c.wide ? addresses.wide.address : addresses.narrow.address;
            const sink = c.wide ? wide : narrow;
            const before = sink.received.length;
            const headers = { 'X-Case': marker };
            if (c.eightBit) {
              // As a sender without a composer writes it: raw UTF-8 in an 8bit part.
              const raw = Buffer.from(
                `From: Ann <ann@sender.example>\r\nTo: ${address}\r\nSubject: ${marker}\r\nX-Case: ${marker}\r\n` +
                  `Date: Mon, 02 Jan 2030 03:04:05 +0000\r\nMessage-ID: <${marker}@sender.example>\r\nMIME-Version: 1.0\r\n` +
                  `Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße, ${marker}\r\n`,
              );
              await smtp.sendMail({ envelope: { from: 'ann@sender.example', to: [address] }, raw });
            } else {
              // Line endings as CRLF: nodemailer's client would send a bare CR as it is (which
              // Postern refuses, 554) and signs a bare LF before its SMTP client makes it CRLF.
              const crlf = (s: string) => s.replace(/\r\n|\r|\n/g, '\r\n');
              await smtp.sendMail({
                from: 'Ann <ann@sender.example>',
                to: address,
                subject: c.subject,
                text: crlf(c.text),
                ...(c.html ? { html: crlf(c.html) } : {}),
                headers,
                dkim: {
                  domainName: 'sender.example',
                  keySelector: 's1',
                  privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
                },
              });
            }
            await forwarder.tick();
            await dispatcher.tick();
            if (c.eightBit && !c.wide) {
              const rcv = (await d.request('GET', '/v1/inbound/messages', { key: spaces.plain.live })).body.messages[0];
              const fwd = (await d.request('GET', `/v1/inbound/messages/${rcv.id}/forward`, { key: spaces.plain.live })).body;
              if (fwd.message?.status !== 'failed' || !/8BITMIME/.test(fwd.message?.error ?? ''))
                throw new Error(`an 8-bit forward to a 7-bit peer: ${JSON.stringify(fwd.message)}`);
              if (sink.received.length !== before) throw new Error('it was sent anyway');
              return;
            }
            const got = sink.received.slice(before).find((r) => r.raw.includes(`X-Case: ${marker}`));
            if (!got) throw new Error(`forward ${marker} did not arrive`);
            if (!/^SRS0=/.test(got.from)) throw new Error(`envelope sender ${got.from} is not SRS`);
            if (c.eightBit && got.body !== '8bitmime') throw new Error(`8-bit forward sent with BODY=${got.body}`);
            // A forward is the original below the trace headers and the ARC set: the checkers
            // must read the same message in it as in the original Postern received, the
            // original's DKIM signature must still verify, and the ARC set must.
            const newest = (await d.request('GET', '/v1/inbound/messages?limit=1', { key: spaces.plain.live })).body.messages[0];
            const rcv = (await d.request('GET', `/v1/inbound/messages/${newest.id}`, { key: spaces.plain.live })).body;
            if (rcv.headers['x-case'] !== marker) throw new Error(`the newest received message is not ${marker}`);
            const original = await checker.facts(
              Buffer.from(
                await (
                  await fetch(`${d.url}/v1/inbound/messages/${rcv.id}/raw`, { headers: { authorization: `Bearer ${spaces.plain.live}` } })
                ).arrayBuffer(),
              ),
            );
            const forwarded = await checker.facts(got.raw);
            const problems: string[] = [];
            for (const key of ['defects', 'headers', 'addresses', 'bodies', 'attachments'] as const)
              if (JSON.stringify(forwarded[key]) !== JSON.stringify(original[key]))
                problems.push(
                  `${key} differ: ${JSON.stringify(forwarded[key]).slice(0, 300)} / ${JSON.stringify(original[key]).slice(0, 300)}`,
                );
            for (const name of ['from', 'subject', 'date', 'message-id', 'mime-version'])
              if (forwarded.counts[name] !== 1) problems.push(`${name}: ${forwarded.counts[name]} fields`);
            if (!original.dkim[0]?.verified !== !forwarded.dkim[0]?.verified)
              problems.push(
                `the original's DKIM signature: ${JSON.stringify(original.dkim)}, forwarded: ${JSON.stringify(forwarded.dkim)}`,
              );
            if (forwarded.arc.result !== 'pass') problems.push(`ARC: ${forwarded.arc.result} ${forwarded.arc.comment ?? ''}`);
            if (forwarded.lines.longest > 998) problems.push(`a line of ${forwarded.lines.longest} octets`);
            if (forwarded.lines.bareLineEnding !== -1) problems.push(`a bare CR or LF at ${forwarded.lines.bareLineEnding}`);
            if (problems.length) throw new Error(problems.join('\n'));
          },
        ),
        FORWARD_RUNS,
      );
    });

    if (db === 'sqlite')
      await t.test('rspamd finds nothing missing or broken in a sample', async (t) => {
        const url = await startRspamd(t, dns.address);
        const sample = delivered.filter((_, i) => i % Math.max(1, Math.floor(delivered.length / 12)) === 0).slice(0, 12);
        t.ok(sample.length >= 6, `${sample.length} messages scored`);
        for (const m of sample) {
          const r = await fetch(`${url}/checkv2`, {
            method: 'POST',
            // A documentation address: rspamd skips DKIM for local ones.
            headers: { IP: '192.0.2.10', Helo: 'mx.postern.test', From: m.from, Rcpt: m.to[0] },
            body: m.raw,
          });
          const symbols = Object.keys(((await r.json()) as { symbols: Record<string, unknown> }).symbols);
          const bad = symbols.filter((s) =>
            ['MISSING_FROM', 'MISSING_DATE', 'MISSING_MID', 'MISSING_MIME_VERSION', 'R_DKIM_REJECT', 'BROKEN_CONTENT_TYPE'].includes(s),
          );
          t.same(bad, [], `rspamd on ${m.to[0]}: ${symbols.join(' ')}`);
          // rspamd did verify: a signed message passes, an unsigned one is reported as such.
          t.ok(symbols.includes(m.raw.includes('DKIM-Signature:') ? 'R_DKIM_ALLOW' : 'R_DKIM_NA'), 'rspamd checked DKIM');
        }
      });
  });
}

/** The content of the template a case names (see the templates made above). */
function templateContent(body: 'text' | 'html' | 'both'): EmailContent {
  const all = { subject: '{{subject}}', preheader: '{{preheader}}', html: '{{{html}}}', text: '{{text}}' };
  if (body === 'text') return { subject: all.subject, text: all.text };
  if (body === 'html') return { subject: all.subject, preheader: all.preheader, html: all.html };
  return all;
}
