// The header block's bounds at the SMTP listener (smtp.maxHeaderBytes, smtp.maxHeaderLines), over
// raw sockets: a header folded over 100,000 lines is refused right after the final dot with 552,
// nothing is stored, and the connection goes on; at the bounds, exactly is taken and one more is
// refused. The scanner itself is table-tested in header-bounds.test.ts.
import t from 'tap';
import { createAddress, RawSmtp, setup, simpleMail } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

async function begin(port: number, to: string): Promise<RawSmtp> {
  const c = await RawSmtp.connect(port);
  await c.cmd('EHLO client.example.org');
  await c.cmd('MAIL FROM:<sender@example.org>');
  await c.cmd(`RCPT TO:<${to}>`);
  const data = await c.cmd('DATA');
  if (!data.startsWith('354 ')) throw new Error(data);
  return c;
}

for (const db of testDatabases()) {
  t.test(`a header folded over 100,000 lines: 552 after the dot, nothing stored, the session goes on (${db})`, async (t) => {
    const env = await setup(t, { db });
    const a = await createAddress(env, { localPart: 'inbox' });
    const stored = async () => (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages.length;
    const c = await begin(env.d.smtpPort, a.address);
    c.write(`From: a@example.org\r\nTo: ${a.address}\r\nSubject: folded\r\n${' x\r\n'.repeat(100_000)}\r\nbody\r\n.\r\n`);
    t.equal(await c.reply(), '552 5.3.4 message header has more than 1000 lines');
    t.equal(await stored(), 0, 'nothing stored');
    await c.cmd('MAIL FROM:<sender@example.org>');
    await c.cmd(`RCPT TO:<${a.address}>`);
    await c.cmd('DATA');
    t.match(
      await c.cmd(simpleMail({ to: a.address, subject: 'next' }) + '.'),
      /^250 2\.0\.0 Ok: stored as rcv_/,
      'the next message is taken',
    );
    t.equal(await stored(), 1);
    c.close();
  });

  t.test(`smtp.maxHeaderLines and smtp.maxHeaderBytes: exactly is taken, one more is refused (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_MAX_HEADER_LINES: '40', POSTERN_SMTP_MAX_HEADER_BYTES: '2048' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    const head = `From: a@example.org\r\nTo: ${a.address}\r\nSubject: bounds\r\n`;
    const send = async (header: string) => {
      const c = await begin(env.d.smtpPort, a.address);
      const reply = await c.cmd(`${header}\r\nbody\r\n.`);
      c.close();
      return reply;
    };
    // 40 lines: the three above and 37 short ones.
    const lines = (n: number) => head + 'X-Pad: y\r\n'.repeat(n - 3);
    t.match(await send(lines(40)), /^250 /, '40 lines');
    t.equal(await send(lines(41)), '552 5.3.4 message header has more than 40 lines');
    // 2048 bytes, line ends included: the three lines above and one long one that fills the rest.
    const bytes = (n: number) => head + `X-Long: ${'z'.repeat(n - Buffer.byteLength(head) - 'X-Long: \r\n'.length)}\r\n`;
    t.equal(Buffer.byteLength(bytes(2048)), 2048);
    t.match(await send(bytes(2048)), /^250 /, '2048 bytes');
    t.equal(await send(bytes(2049)), '552 5.3.4 message header exceeds fixed maximum header size 2048');
  });
}
