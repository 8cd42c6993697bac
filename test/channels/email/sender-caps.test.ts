// Custom sending domains need a paid plan: free → 403 plan_limit, paid → accepted.
import t from 'tap';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { addVerifiedDomain } from '../../helpers/smtp-sink.js';

for (const db of testDatabases()) {
  t.test(`a from on a verified custom domain needs a paid plan (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    const free = await d.workspace('freeco');
    const paid = await d.workspace('paidco', { plan: 'starter' });
    await addVerifiedDomain(d.app, free.id, 'free.example');
    await addVerifiedDomain(d.app, paid.id, 'paid.example');
    const body = (from: string) => ({ to: 'ann@example.net', channel: 'email', from, content: { subject: 'Hi', text: 'hello' } });

    const refused = await d.request('POST', '/v1/send-raw', { key: free.test, body: body('news@free.example') });
    t.equal(refused.status, 403);
    t.equal(refused.body.error.code, 'plan_limit');
    t.match(refused.body.error.message, /paid plan/);
    t.equal((await d.request('GET', '/v1/messages', { key: free.test })).body.data.length, 0, 'nothing was queued');

    t.equal(
      (await d.request('POST', '/v1/send-raw', { key: free.test, body: body('someone@elsewhere.example') })).status,
      202,
      'a from on no verified domain is not a custom sending domain',
    );
    t.equal(
      (await d.request('POST', '/v1/send-raw', { key: paid.test, body: body('news@paid.example') })).status,
      202,
      'starter may send from its domain',
    );
  });
}
