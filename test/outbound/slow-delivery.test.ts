// A slow delivery ties up its own slot and nothing else: while one message is in flight for as long
// as its receiver takes, what is sent meanwhile is claimed and delivered in the other slots
// (src/outbound/dispatcher.ts). The background worker runs as in production; nothing is ticked.
import t from 'tap';
import { createCaptureTransport } from '../helpers/capture-transport.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { until } from '../helpers/until.js';

const email = (to: string) => ({ to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } });

for (const db of testDatabases()) {
  t.test(`one slow delivery does not hold up the others (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const cap = createCaptureTransport();
    d.app.outbound.registerTransport('email', cap);
    let finish!: () => void;
    const slow = new Promise<void>((r) => (finish = r));
    cap.fallback = async (delivery) => {
      if (delivery.message.recipient === 'slow@example.com') await slow;
      return { kind: 'delivered', provider: 'capture', providerMessageId: delivery.message.publicId };
    };
    t.teardown(() => finish());

    const send = async (to: string) => {
      const r = await d.request('POST', '/v1/send', { key: ws.live, body: email(to) });
      t.equal(r.status, 202);
      return r.body.id as string;
    };
    await send('slow@example.com');
    await cap.waitFor(1);
    const quick: string[] = [];
    for (let i = 0; i < 5; i++) quick.push(await send(`quick${i}@example.com`));
    // A bound, not a wait: before the fix these waited for the slow one, which never ends here.
    const delivered = await Promise.race([
      cap.waitFor(6).then(() => true),
      new Promise<false>((r) => setTimeout(() => r(false), 60_000).unref()),
    ]);
    t.ok(delivered, 'the messages sent meanwhile were handed over while the slow one was in flight');
    // The hand-over comes before its outcome is committed: wait for the outcomes themselves.
    const statuses = () =>
      Promise.all(quick.map(async (id) => (await d.request('GET', `/v1/messages/${id}`, { key: ws.live })).body.status as string));
    await until('the quick messages delivered', async () => (await statuses()).every((s) => s === 'delivered'));
    t.same(await statuses(), ['delivered', 'delivered', 'delivered', 'delivered', 'delivered']);
    finish();
  });
}
