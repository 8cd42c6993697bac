// The log lines about a message name it, so one message can be followed through the logs: an MX
// attempt that failed names its msg_ id, a received mail stored in part names its rcv_ id.
import net from 'node:net';
import t from 'tap';
import { sendRaw, setup } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

for (const db of testDatabases()) {
  t.test(`log lines about a message carry its id (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_DELIVERY_PORT: String(await closedPort()), POSTERN_INBOUND_MAX_PARTS: '10' } });
    const { d, dns } = env;
    dns.set('example.net', [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }]);
    dns.set('mx.example.net', [{ type: 'A', data: '127.0.0.1' }]);
    const sent = await d.request('POST', '/v1/send-raw', {
      key: env.ws.live,
      body: { to: 'ann@example.net', channel: 'email', content: { subject: 'Hi', text: 'x' } },
    });
    t.equal(sent.status, 202);
    await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    const lines = () => d.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    const attempt = lines().find((l) => l.msg === 'mx attempt failed; trying the next');
    t.ok(attempt, 'the failed attempt is logged');
    t.equal(attempt?.message, sent.body.id, 'with the message id');

    const parts = Array.from({ length: 12 }, (_, i) => String(i))
      .map((x) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${x}\r\n`)
      .join('');
    const raw = `From: x@sender.example\r\nTo: in@${env.shared}\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n${parts}--b--\r\n`;
    await sendRaw(d.smtpPort, { from: 'x@sender.example', to: [`in@${env.shared}`] }, raw);
    const partial = lines().find((l) => l.msg === 'inbound message parsed in part (stored truncated)');
    t.ok(partial, 'a mail stored in part is logged');
    t.match(partial?.messages, [/^rcv_/], 'with the received message id');
  });
}
