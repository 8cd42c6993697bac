// Spam and virus verdicts from the real scanners: rspamd (Debian's, DNS on the loopback server)
// and clamd (with the EICAR signature), both on loopback, before the 250. A clean message and the
// GTUBE string are scored and stored; EICAR is refused with 554; `rejectScore` refuses spam with
// 550; a scanner that does not answer leaves `temperror` and the message is still stored.
import net from 'node:net';
import nodemailer from 'nodemailer';
import t from 'tap';
import { createAddress, sendRaw, setup, simpleMail, type InboundEnv } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { freePort } from '../helpers/ports.js';
import { EICAR, GTUBE, startClamd, startRspamd } from '../helpers/scanners.js';

async function latest(env: InboundEnv) {
  const list = await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live });
  const id = list.body.messages[0]?.id as string | undefined;
  if (!id) return null;
  return (await env.d.request('GET', `/v1/inbound/messages/${id}`, { key: env.ws.live })).body;
}

async function refusedWith(env: InboundEnv, to: string, raw: string): Promise<{ code: number; message: string }> {
  try {
    const reply = await sendRaw(env.d.smtpPort, { from: 'a@sender.example', to: [to] }, raw);
    return { code: 250, message: reply };
  } catch (err) {
    const e = err as { responseCode?: number; response?: string };
    return { code: e.responseCode ?? -1, message: e.response ?? String(err) };
  }
}

async function withAttachment(to: string, name: string, content: string): Promise<string> {
  const built = await nodemailer.createTransport({ streamTransport: true, buffer: true }).sendMail({
    from: 'Alice <alice@sender.example>',
    to,
    subject: 'The file',
    text: 'Attached.',
    attachments: [{ filename: name, content }],
  });
  return (built.message as Buffer).toString();
}

// One rspamd for the file (it takes a while to load its rules), asking a loopback DNS server.
let rspamdUrl: Promise<string> | null = null;
const rspamdOnce = async (): Promise<string> => {
  rspamdUrl ??= (async () => {
    const dns = await startDnsServer();
    t.teardown(() => dns.close());
    return startRspamd(t, dns.address);
  })();
  return rspamdUrl;
};

for (const db of testDatabases()) {
  t.test(`rspamd and clamd verdicts, stored and enforced (${db})`, async (t) => {
    const [rspamd, clamd] = await Promise.all([rspamdOnce(), startClamd(t)]);
    const env = await setup(t, {
      db,
      env: { POSTERN_INBOUND_RSPAMD_URL: rspamd, POSTERN_INBOUND_CLAMD_ADDRESS: clamd, POSTERN_INBOUND_ANALYSIS_THREADS: '0' },
    });
    const a = await createAddress(env, { localPart: 'inbox' });

    t.match(
      await sendRaw(
        env.d.smtpPort,
        { from: 'alice@sender.example', to: [a.address] },
        simpleMail({ to: a.address, body: 'Lunch tomorrow at noon?' }),
      ),
      /^250 /,
    );
    const clean = await latest(env);
    t.match(clean.verdicts.spam, { result: 'ham', action: 'no action', score: Number, requiredScore: Number, symbols: Object });
    t.ok(Object.keys(clean.verdicts.spam.symbols).length > 0, 'rspamd symbols are kept');
    t.same(clean.verdicts.virus, { result: 'clean' });

    t.match(
      await sendRaw(
        env.d.smtpPort,
        { from: 'alice@sender.example', to: [a.address] },
        simpleMail({ to: a.address, subject: 'GTUBE', body: GTUBE }),
      ),
      /^250 /,
    );
    const gtube = await latest(env);
    t.equal(gtube.subject, 'GTUBE');
    t.match(gtube.verdicts.spam, { result: 'spam', action: 'reject' });
    t.ok(gtube.verdicts.spam.score >= 15, `score ${gtube.verdicts.spam.score}`);
    t.ok('GTUBE' in gtube.verdicts.spam.symbols);

    const virus = await refusedWith(env, a.address, await withAttachment(a.address, 'eicar.com', EICAR));
    t.equal(virus.code, 554);
    t.match(virus.message, '5.7.1 message refused: it contains a virus (Postern.Test.Eicar');
    t.equal((await latest(env)).subject, 'GTUBE', 'the infected message was not stored');
  });

  t.test(`inbound.rspamd.rejectScore refuses spam with 550 (${db})`, async (t) => {
    const rspamd = await rspamdOnce();
    const env = await setup(t, { db, env: { POSTERN_INBOUND_RSPAMD_URL: rspamd, POSTERN_INBOUND_RSPAMD_REJECT_SCORE: '10' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    const spam = await refusedWith(env, a.address, simpleMail({ to: a.address, body: GTUBE }));
    t.equal(spam.code, 550);
    t.match(spam.message, /5\.7\.1 message refused as spam \(score \d+/);
    t.equal(await latest(env), null);
    t.match(await sendRaw(env.d.smtpPort, { from: 'alice@sender.example', to: [a.address] }, simpleMail({ to: a.address })), /^250 /);
  });

  t.test(`a scanner that does not answer leaves temperror; the message is stored (${db})`, async (t) => {
    // rspamd's address accepts connections and never answers; clamd's refuses them.
    const held = new Set<net.Socket>();
    const silent = net.createServer((s) => held.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    t.teardown(
      () =>
        new Promise((r) => {
          for (const s of held) s.destroy();
          silent.close(r);
        }),
    );
    const closed = await freePort();
    const env = await setup(t, {
      db,
      env: {
        POSTERN_INBOUND_RSPAMD_URL: `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`,
        POSTERN_INBOUND_RSPAMD_TIMEOUT: '500ms',
        POSTERN_INBOUND_CLAMD_ADDRESS: `127.0.0.1:${closed}`,
      },
    });
    const a = await createAddress(env, { localPart: 'inbox' });
    t.match(await sendRaw(env.d.smtpPort, { from: 'alice@sender.example', to: [a.address] }, simpleMail({ to: a.address })), /^250 /);
    const m = await latest(env);
    t.same(m.verdicts.spam, { result: 'temperror', details: 'rspamd: no answer within 500 ms' });
    t.match(m.verdicts.virus, { result: 'temperror', details: /^clamd: connect ECONNREFUSED/ });
    t.ok(env.d.logs.some((l) => l.includes('spam check unavailable')));
  });

  t.test(`without scanners the verdicts say none (${db})`, async (t) => {
    const env = await setup(t, { db });
    const a = await createAddress(env, { localPart: 'inbox' });
    await sendRaw(env.d.smtpPort, { from: 'alice@sender.example', to: [a.address] }, simpleMail({ to: a.address, body: GTUBE }));
    const m = await latest(env);
    t.same(m.verdicts.spam, { result: 'none' });
    t.same(m.verdicts.virus, { result: 'none' });
  });
}
