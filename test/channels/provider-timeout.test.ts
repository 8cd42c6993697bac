// `channels.timeout` bounds one request to a provider (docs/providers.md): a provider that accepts
// the request and never answers costs the attempt about that long, and the message is deferred
// (a temporary failure, retried), never left waiting on the provider. Here an HTTP SMS gateway on
// loopback holds its answer; with the timeout at 500 ms (the default is 15 s) the dispatcher's pass
// ends, with the message deferred, and the retry, answered, sends it.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { startHttpFake, type Answer } from '../helpers/provider-fakes.js';

for (const db of testDatabases()) {
  t.test(`a provider that never answers is cut at channels.timeout and the message deferred (${db})`, async (t) => {
    const d = await bootDaemon(t, { db, env: { POSTERN_CHANNELS_ALLOW_LIST: '127.0.0.1', POSTERN_CHANNELS_TIMEOUT: '500ms' } });
    const acme = await d.workspace('acme');
    let hang = true;
    const held: Array<(a: Answer) => void> = [];
    t.teardown(() => held.forEach((answer) => answer({ status: 503 })));
    const gw = await startHttpFake(t, () =>
      hang ? new Promise<Answer>((resolve) => held.push(resolve)) : { status: 200, body: { id: 'gw-1', status: 'sent' } },
    );
    const add = await d.cli(
      ...['connection', 'add', '--workspace', 'acme', '--env', 'live', '--channel', 'sms', '--provider', 'http'],
      ...['--url', `${gw.url}/send`, '--secret', 'gateway-secret-timeout'],
    );
    t.equal(add.code, 0, add.stderr);
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    const sent = await d.request('POST', '/v1/send-raw', {
      key: acme.live,
      body: { channel: 'sms', to: '+14155550100', content: { body: 'code 123456' } },
    });
    t.equal(sent.status, 202);

    const started = performance.now();
    await dispatcher.tick();
    const elapsed = performance.now() - started;
    t.equal(gw.requests.length, 1, 'the gateway got the request and held its answer');
    // The gateway never answers (it is held until teardown), so the pass ending at all is the cut; the
    // time it took is only held from below: a loaded machine may take longer to do the same work.
    t.ok(elapsed >= 450, `the attempt waited channels.timeout before giving up (${Math.round(elapsed)} ms)`);
    const m = (await d.request('GET', `/v1/messages/${sent.body.id}`, { key: acme.live })).body;
    t.match(m, { status: 'dispatched', error: 'sms gateway: timed out' }, 'deferred: still dispatched, a retry due');
    t.ok(
      m.timeline.some((e: { e: string }) => /^deferred/.test(e.e)),
      'a deferred entry on the timeline',
    );

    hang = false;
    d.clock.advance(3600_000);
    await dispatcher.tick();
    t.equal(gw.requests.length, 2, 'retried');
    t.match((await d.request('GET', `/v1/messages/${sent.body.id}`, { key: acme.live })).body, {
      status: 'sent',
      providerMessageId: 'gw-1',
    });
  });
}
