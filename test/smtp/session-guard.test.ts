// One client must not lock out inbound mail (a thousand connections kept alive with NOOP used to
// fill smtp.maxClients, and everyone else got 421 for minutes). Spoken over real sockets from
// 127.0.0.1, with 127.0.0.2 as a second client (loopback has all of 127/8), and small limits in the
// daemon's config: per-address connections and connection rate, the NOOP/RSET budget, the command
// timeout. Loopback is exempt by default, so these tests clear smtp.limitExceptions.
import t from 'tap';
import { createAddress, RawSmtp, setup, simpleMail } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

const OTHER = { localAddress: '127.0.0.2' };

/** A whole transaction on an open connection; resolves with the final reply. */
async function deliver(c: RawSmtp, to: string, subject: string): Promise<string> {
  await c.cmd('MAIL FROM:<sender@example.org>');
  await c.cmd(`RCPT TO:<${to}>`);
  await c.cmd('DATA');
  return c.cmd(simpleMail({ to, subject }) + '.');
}

for (const db of testDatabases()) {
  t.test(`a pipelined group gets every reply, in order, and a message sent after it is stored (${db})`, async (t) => {
    // Replies made in one turn of the event loop leave in one write (session-guard.ts corks the
    // socket): what a pipelining client reads must be what it would read one command at a time.
    const env = await setup(t, { db });
    const a = await createAddress(env, { localPart: 'inbox' });
    const c = await RawSmtp.connect(env.d.smtpPort);
    t.match(await c.cmd('EHLO pipe.example.org'), /250-PIPELINING/);
    for (let round = 0; round < 2; round++) {
      c.write(`MAIL FROM:<sender@example.org>\r\nRCPT TO:<someone@not-ours.example>\r\nRCPT TO:<${a.address}>\r\nDATA\r\n`);
      t.match(await c.reply(), /^250 /, `round ${round + 1}: MAIL`);
      t.equal(await c.reply(), '550 5.7.1 <someone@not-ours.example>: relay access denied', 'the refused recipient');
      t.match(await c.reply(), /^250 /, 'the address of ours');
      t.match(await c.reply(), /^354 /, 'DATA');
      t.match(await c.cmd(simpleMail({ to: a.address, subject: `Pipelined ${round + 1}` }) + '.'), /^250 2\.0\.0 Ok: stored as rcv_/);
    }
    t.match(await c.cmd('QUIT'), /^221 /);
    c.close();
  });

  t.test(`per-address connection limit: the next connection of that address gets 421, others still connect (${db})`, async (t) => {
    const env = await setup(t, {
      db,
      env: { POSTERN_SMTP_MAX_CONNECTIONS_PER_ADDRESS: '3', POSTERN_SMTP_LIMIT_EXCEPTIONS: '', POSTERN_SMTP_MAX_CLIENTS: '5' },
    });
    const a = await createAddress(env, { localPart: 'inbox' });
    const held = await Promise.all([1, 2, 3].map(() => RawSmtp.connect(env.d.smtpPort)));
    for (const c of held) {
      t.match(c.greeting, /^220 /);
      await c.cmd('EHLO flood.example.org');
      t.match(await c.cmd('NOOP'), /^250 /, 'held open with NOOP');
    }
    const refused = await RawSmtp.connect(env.d.smtpPort);
    t.match(
      refused.greeting,
      /^421 4\.7\.0 mx\.postern\.test too many connections from 127\.0\.0\.1 \(at most 3 at once\), try again later$/,
    );
    await refused.waitClose();
    t.ok(refused.closed, 'and the connection is closed');

    const other = await RawSmtp.connect(env.d.smtpPort, OTHER);
    t.match(other.greeting, /^220 /, 'another address still connects');
    await other.cmd('EHLO other.example.org');
    t.match(await deliver(other, a.address, 'From elsewhere'), /^250 2\.0\.0 Ok: stored as rcv_/, 'and delivers');
    other.close();

    t.match(await held[0].cmd('QUIT'), /^221 /);
    const again = await RawSmtp.connect(env.d.smtpPort);
    t.match(again.greeting, /^220 /, 'a slot freed by QUIT is taken again');
    for (const c of [again, ...held]) c.close();
  });

  t.test(`per-address connection rate: 421 past the rate, refilled as time passes (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_CONNECTION_RATE_PER_ADDRESS: '3/min', POSTERN_SMTP_LIMIT_EXCEPTIONS: '' } });
    for (let i = 0; i < 3; i++) {
      const c = await RawSmtp.connect(env.d.smtpPort);
      t.match(c.greeting, /^220 /, `connection ${i + 1}`);
      t.match(await c.cmd('QUIT'), /^221 /);
    }
    const refused = await RawSmtp.connect(env.d.smtpPort);
    t.match(
      refused.greeting,
      /^421 4\.7\.0 mx\.postern\.test too many new connections from 127\.0\.0\.1 \(at most 3\/min\), try again later$/,
    );
    await refused.waitClose();
    const other = await RawSmtp.connect(env.d.smtpPort, OTHER);
    t.match(other.greeting, /^220 /, 'another address is not affected');
    other.close();
    env.d.clock.advance(20_000);
    const later = await RawSmtp.connect(env.d.smtpPort);
    t.match(later.greeting, /^220 /, 'a third of a minute later, one more');
    later.close();
    const tooSoon = await RawSmtp.connect(env.d.smtpPort);
    t.match(tooSoon.greeting, /^421 4\.7\.0 /, 'and only one');
  });

  t.test(`loopback is exempt by default (${db})`, async (t) => {
    const env = await setup(t, {
      db,
      env: { POSTERN_SMTP_MAX_CONNECTIONS_PER_ADDRESS: '1', POSTERN_SMTP_CONNECTION_RATE_PER_ADDRESS: '1/min' },
    });
    const conns = await Promise.all([1, 2, 3].map(() => RawSmtp.connect(env.d.smtpPort)));
    t.same(
      conns.map((c) => c.greeting.slice(0, 4)),
      ['220 ', '220 ', '220 '],
    );
    for (const c of conns) c.close();
  });

  t.test(`NOOP/RSET budget: past smtp.maxNoops the client is disconnected with 421 (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_MAX_NOOPS: '4' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    const c = await RawSmtp.connect(env.d.smtpPort);
    await c.cmd('EHLO client.example.org');
    for (const cmd of ['NOOP', 'RSET', 'NOOP', 'NOOP']) t.match(await c.cmd(cmd), /^250 /, cmd);
    t.match(await deliver(c, a.address, 'Between the NOOPs'), /^250 2\.0\.0 Ok: stored/, 'a message in between is accepted');
    for (let i = 0; i < 4; i++) t.match(await c.cmd(i % 2 ? 'RSET' : 'NOOP'), /^250 /, 'the budget starts again after a message');
    t.match(
      await c.cmd('NOOP'),
      /^421 4\.7\.0 mx\.postern\.test too many NOOP, RSET, VRFY or HELP commands \(at most 4 between messages\), closing connection$/,
    );
    await c.waitClose();
    t.ok(c.closed);
  });

  t.test(`command timeout: an idle client is cut; one sending a message is not (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_COMMAND_TIMEOUT: '500ms' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    // A client in the middle of DATA since before the idle one's last reply, sending a line every
    // 100 ms (the timeout in DATA is the longest silence between two pieces of the message).
    const sending = await RawSmtp.connect(env.d.smtpPort, OTHER);
    await sending.cmd('EHLO sender.example.org');
    await sending.cmd('MAIL FROM:<sender@example.org>');
    await sending.cmd(`RCPT TO:<${a.address}>`);
    t.match(await sending.cmd('DATA'), /^354 /);
    sending.write('Subject: slow\r\n\r\n');
    const lines = setInterval(() => sending.write('still here\r\n'), 100);
    t.teardown(() => clearInterval(lines));

    const idle = await RawSmtp.connect(env.d.smtpPort);
    const started = performance.now();
    await idle.cmd('EHLO idle.example.org');
    idle.write('NOO'); // part of a command, never finished
    t.match(await idle.reply(), /^421 4\.4\.2 mx\.postern\.test timeout: no command within 0\.5 s, closing connection$/);
    await idle.waitClose();
    const waited = performance.now() - started;
    t.ok(waited >= 450 && waited < 30_000, `cut after ${Math.round(waited)} ms`);

    clearInterval(lines);
    sending.write('.\r\n');
    t.match(await sending.reply(), /^250 2\.0\.0 Ok: stored as rcv_/, 'the message in DATA meanwhile is accepted');
    sending.close();
  });

  t.test(`command timeout: nothing at all after EHLO, or a command a byte at a time, gets 421 (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_COMMAND_TIMEOUT: '300ms' } });
    const silent = await RawSmtp.connect(env.d.smtpPort);
    await silent.cmd('EHLO silent.example.org');
    t.match(await silent.reply(), /^421 4\.4\.2 mx\.postern\.test timeout: no command within 0\.3 s, closing connection$/);
    await silent.waitClose();
    t.ok(silent.closed, 'closed');

    // One byte every 50 ms never completes a line: the bytes do not extend the deadline.
    const trickle = await RawSmtp.connect(env.d.smtpPort);
    await trickle.cmd('EHLO trickle.example.org');
    const bytes = 'MAIL FROM:<sender@example.org>'.repeat(100);
    let i = 0;
    const pump = setInterval(() => trickle.write(bytes[i++ % bytes.length]), 50);
    t.teardown(() => clearInterval(pump));
    t.match(await trickle.reply(), /^421 4\.4\.2 mx\.postern\.test timeout: no command within 0\.3 s, closing connection$/);
    clearInterval(pump);
    await trickle.waitClose();
    t.ok(i >= 4, `${i} bytes trickled before the cut`);
  });

  t.test(`in DATA, a client that stops sending gets 421 after the timeout, and nothing is stored (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SMTP_COMMAND_TIMEOUT: '300ms' } });
    const a = await createAddress(env, { localPart: 'inbox' });
    const c = await RawSmtp.connect(env.d.smtpPort);
    await c.cmd('EHLO stalled.example.org');
    await c.cmd('MAIL FROM:<sender@example.org>');
    await c.cmd(`RCPT TO:<${a.address}>`);
    t.match(await c.cmd('DATA'), /^354 /);
    c.write('Subject: stalled\r\nTo: ' + a.address + '\r\n\r\nthe first lines, then noth');
    t.match(await c.reply(), /^421 4\.4\.2 mx\.postern\.test timeout: no data of the message within 0\.3 s, closing connection$/);
    await c.waitClose();
    t.ok(c.closed, 'closed');
    const stored = await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live });
    t.equal(stored.body.messages.length, 0, 'nothing stored');
  });
}
