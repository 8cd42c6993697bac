import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { emit, sampleMessage, tick } from '../helpers/webhooks.js';
import { startReceiver, verify } from '../helpers/webhook-receiver.js';

for (const db of testDatabases()) {
  t.test(`postern webhook …: the same operations as the API (${db})`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    const acme = await d.workspace('acme');
    let status = 500;
    const rx = await startReceiver(() => status);
    t.teardown(() => rx.close());

    const created = await d.cli(
      'webhook',
      'create',
      '--workspace',
      'acme',
      '--url',
      rx.url,
      '--events',
      'message.sent,message.failed',
      '--description',
      'ops',
    );
    t.equal(created.code, 0, created.stderr);
    t.match(created.json, { id: /^whk_/, secret: /^whsec_/, events: ['message.sent', 'message.failed'], livemode: true });
    const id = created.json.id;

    const list = await d.cli('webhook', 'list', '--workspace', 'acme');
    t.same(
      list.json.map((e: { id: string }) => e.id),
      [id],
    );
    t.notMatch(list.stdout, /whsec_/);
    t.same((await d.cli('webhook', 'list', '--workspace', 'acme', '--env', 'test')).json, []);
    t.equal((await d.cli('webhook', 'get', id, '--workspace', 'acme')).json.description, 'ops');
    t.equal((await d.request('GET', `/v1/webhooks/${id}`, { key: acme.live })).body.description, 'ops', 'the API sees what the CLI made');

    const upd = await d.cli('webhook', 'update', id, '--workspace', 'acme', '--description', 'ops team', '--enabled', 'true');
    t.equal(upd.json.description, 'ops team');
    const bad = await d.cli('webhook', 'create', '--workspace', 'acme', '--url', 'nope');
    t.equal(bad.code, 1);
    t.equal(JSON.parse(bad.stderr).error.code, 'invalid_body');
    t.equal((await d.cli('webhook', 'get', '--workspace', 'acme')).code, 2, 'missing id is a usage error');

    await emit(d, acme.id, 'message.sent', sampleMessage(1));
    await tick(d);
    const dl = await d.cli('webhook', 'deliveries', id, '--workspace', 'acme');
    t.match(dl.json, [{ id: /^dlv_/, status: 'pending', attemptCount: 1, lastStatusCode: 500, attempts: [{ statusCode: 500 }] }]);

    status = 200;
    const retry = await d.cli('webhook', 'retry', id, dl.json[0].id, '--workspace', 'acme');
    t.equal(retry.code, 0, retry.stderr);
    t.match(retry.json, { status: 'pending', nextAttemptAt: /^\d{4}-/ });
    // The CLI runs on the system clock; move the daemon's manual clock past it.
    d.clock.advance(60_000);
    await tick(d);
    t.equal(rx.requests.length, 2);

    const rot = await d.cli('webhook', 'rotate-secret', id, '--workspace', 'acme');
    t.match(rot.json.secret, /^whsec_/);
    await emit(d, acme.id, 'message.sent', sampleMessage(2));
    await tick(d);
    t.ok(verify(rot.json.secret, rx.requests[2]));
    t.ok(verify(created.json.secret, rx.requests[2]));

    const del = await d.cli('webhook', 'delete', id, '--workspace', 'acme');
    t.same(del.json, { id, deleted: true });
    t.same((await d.cli('webhook', 'list', '--workspace', 'acme')).json, []);
  });
}
