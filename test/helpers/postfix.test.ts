// The private Postfix as a submission server (`sasl`): what a client must do to relay through it,
// and the name it logs in with (the bare name, or the name with the realm: both work).
import nodemailer from 'nodemailer';
import t from 'tap';
import { postfixUnavailable, startPostfix } from './postfix.js';
import { startSink } from './smtp-sink.js';

t.test('Postfix with SASL relays for an authenticated client only', async (t) => {
  const unavailable = postfixUnavailable({ sasl: true });
  if (unavailable) {
    t.fail(`this test needs a real Postfix with SASL: ${unavailable}`);
    return;
  }
  const sink = await startSink(t);
  const postfix = await startPostfix({ relayPort: sink.port, sasl: { user: 'bench', password: 'bench-secret' } });
  t.teardown(() => postfix.stop());
  const send = (auth: { user: string; pass: string } | undefined, to: string) =>
    nodemailer
      .createTransport({ host: '127.0.0.1', port: postfix.port, requireTLS: true, tls: { rejectUnauthorized: false }, auth })
      .sendMail({ envelope: { from: 'app@example.org', to }, raw: `From: app@example.org\r\nTo: ${to}\r\nSubject: hi\r\n\r\nhi\r\n` });

  for (const [user, to] of [
    ['bench', 'bare@example.net'],
    ['bench@postfix.postern.test', 'realm@example.net'],
  ]) {
    const info = await send({ user, pass: 'bench-secret' }, to);
    t.match(info.response, /^250 /, `${user} may relay`);
  }
  await Promise.race([postfix.failure(), sink.waitFor(2)]);
  t.same(sink.received.map((r) => r.to).sort(), [['bare@example.net'], ['realm@example.net']], 'both relayed to the sink');

  await t.rejects(send({ user: 'bench', pass: 'wrong' }, 'x@example.net'), { responseCode: 535 } as never, 'a wrong password is refused');
  await t.rejects(send(undefined, 'x@example.net'), { responseCode: 554 } as never, 'an unauthenticated client may not relay');
});
