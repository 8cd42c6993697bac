// smtp-relay: every message goes to one smarthost (a second smtp-server with AUTH) through a pool;
// its 250 makes the message `sent`; a 5xx from the relay fails it.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { startSink } from './helpers.js';

t.test('relay mode sends through the smarthost with credentials', async (t) => {
  const relay = await startSink(t, {
    auth: { user: 'postern', pass: 's3cret' },
    rcpt: (a) => (a.startsWith('bad@') ? { code: 550, message: '5.1.1 unknown' } : undefined),
  });
  const d = await bootDaemon(t, {
    env: {
      POSTERN_DELIVERY_MODE: 'relay',
      POSTERN_DELIVERY_RELAY_URL: `smtp://postern:s3cret@127.0.0.1:${relay.port}`,
      POSTERN_DELIVERY_TLS: 'none',
    },
  });
  const ws = await d.workspace('acme', { plan: 'pro' });
  const tick = () => d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
  const send = (to: string, extra: object = {}) =>
    d.request('POST', '/v1/send-raw', {
      key: ws.live,
      body: { to, channel: 'email', content: { subject: 'Relayed', text: 'hello' }, ...extra },
    });

  const ok = await send('someone@anywhere.example', { cc: ['other@elsewhere.example'], bcc: ['hidden@anywhere.example'] });
  t.equal(ok.status, 202);
  await tick();
  const m = (await d.request('GET', `/v1/messages/${ok.body.id}`, { key: ws.live })).body;
  t.match(m, { status: 'sent', provider: 'smtp-relay', providerMessageId: `<${ok.body.id}@mx.postern.test>` });
  t.equal(relay.received.length, 1, 'one transaction for all recipients');
  t.same(relay.received[0].to.sort(), ['hidden@anywhere.example', 'other@elsewhere.example', 'someone@anywhere.example']);
  t.equal(relay.received[0].from, `bounces+${ok.body.id}@bounces.mx.postern.test`);
  t.notMatch(relay.received[0].raw.toString(), /^Bcc:/m);

  const bad = await send('bad@anywhere.example');
  await tick();
  t.match((await d.request('GET', `/v1/messages/${bad.body.id}`, { key: ws.live })).body, {
    status: 'failed',
    error: /550 5\.1\.1 unknown/,
  });
});
