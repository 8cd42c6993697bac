// With inbound.storeWorker on (SQLite), the daemon stores received mail from a worker thread: the
// message is committed there before the 250, and the API reads it right after.
import t from 'tap';
import { createAddress, sendRaw, setup, simpleMail } from './helpers.js';

t.test('received mail is committed by the store worker before the 250', async (t) => {
  const env = await setup(t, { db: 'sqlite', env: { POSTERN_INBOUND_STORE_WORKER: 'true' } });
  const a = await createAddress(env, { localPart: 'inbox' });
  const replies = await Promise.all(
    [1, 2, 3].map((i) =>
      sendRaw(env.d.smtpPort, { from: 'x@example.org', to: [a.address] }, simpleMail({ to: a.address, subject: `Worker ${i}` })),
    ),
  );
  for (const r of replies) t.match(r, /^250 /);
  t.ok(env.d.app.inbound.committer.stats.workerBatches > 0, 'stored through the worker');
  const list = await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live });
  t.same(list.body.messages.map((m: { subject: string }) => m.subject).sort(), ['Worker 1', 'Worker 2', 'Worker 3']);
});
