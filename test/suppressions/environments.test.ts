// Suppressions are per environment, as messages are: a test key's simulated bounce of
// failed@example.com suppresses it for test sends only, and a live send to the address is
// delivered to the MX; a live bounce holds live sends and never shows in the test list. The API,
// the CLI (--test) and the dispatcher's hold all read the environment's list. On both databases.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startRemoteMx } from '../helpers/smtp-sink.js';

const tick = async (d: { app: { workers: { name: string; tick(): Promise<void> }[] } }) =>
  d.app.workers.find((w) => w.name === 'dispatcher')!.tick();

for (const db of testDatabases()) {
  t.test(`a test-key simulation does not suppress the address for live sends on ${db}`, async (t) => {
    const { sink, env } = await startRemoteMx(t, {
      domains: ['example.com', 'example.net'],
      rcpt: (a) => (a === 'gone@example.net' ? { code: 550, message: '5.1.1 no such user' } : undefined),
    });
    const d = await bootDaemon(t, { db, env });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const send = async (key: string, to: string) => {
      const r = await d.request('POST', '/v1/send-raw', { key, body: { to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } } });
      t.equal(r.status, 202);
      await tick(d);
      return (await d.request('GET', `/v1/messages/${r.body.id}`, { key })).body;
    };
    const listed = async (key: string) => (await d.request('GET', '/v1/suppressions', { key })).body.data.map((s: any) => s.address);

    t.match(await send(ws.test, 'failed@example.com'), { status: 'failed', livemode: false });
    t.same(await listed(ws.test), ['failed@example.com'], "the simulation's bounce is on the test list");
    t.same(await listed(ws.live), [], 'and not on the live list');
    t.match(await send(ws.test, 'failed@example.com'), { status: 'suppressed' }, 'a second test send is held');

    const live = await send(ws.live, 'failed@example.com');
    t.match(live, { status: 'delivered', livemode: true }, 'a live send to the address goes out');
    t.ok(
      sink.received.some((m) => m.to.includes('failed@example.com')),
      'and reached the MX',
    );

    t.match(await send(ws.live, 'gone@example.net'), { status: 'failed' }, 'a real hard bounce');
    t.same(await listed(ws.live), ['gone@example.net'], 'is on the live list');
    t.same(await listed(ws.test), ['failed@example.com'], 'and not on the test list');
    t.match(await send(ws.live, 'gone@example.net'), { status: 'suppressed' }, 'it holds live sends');
    t.match(await send(ws.test, 'gone@example.net'), { status: 'delivered' }, 'not test sends');

    const cliTest = await d.cli('suppression', 'list', '--workspace', 'acme', '--test');
    t.equal(cliTest.code, 0, cliTest.stderr);
    t.same(
      cliTest.json.map((s: any) => s.address),
      ['failed@example.com'],
      'the CLI shows the test list with --test',
    );
    t.same(
      (await d.cli('suppression', 'list', '--workspace', 'acme')).json.map((s: any) => s.address),
      ['gone@example.net'],
      'and the live list without',
    );

    // Removing from one list leaves the other.
    t.equal((await d.request('POST', '/v1/suppressions', { key: ws.live, body: { address: 'failed@example.com' } })).status, 201);
    t.equal((await d.request('DELETE', '/v1/suppressions/failed@example.com', { key: ws.test })).status, 200);
    t.same(await listed(ws.test), [], 'the test entry is gone');
    t.same(await listed(ws.live), ['failed@example.com', 'gone@example.net'], 'the live one of the same address stays');
  });
}
