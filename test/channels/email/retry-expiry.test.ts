// Retry expiry through the real email transport: the loopback MX answers 451 to every RCPT, so each
// attempt is deferred and retried on `retry.schedule` (driven by the daemon's ManualClock) until the
// next attempt would fall past `retry.maxAge`; then the message fails with `retries expired: …`
// and the MX is never tried again (docs/api/messages.md, Retries).
import t from 'tap';
import { bootDaemon, plainEmail } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startRemoteMx } from '../../helpers/smtp-sink.js';

const MIN = 60_000;

for (const db of testDatabases()) {
  t.test(`a message the MX keeps deferring fails once retry.maxAge is reached on ${db}`, async (t) => {
    const rcpts: string[] = [];
    let greylist = true;
    const { sink, env } = await startRemoteMx(t, {
      rcpt: (a) => {
        rcpts.push(a);
        return greylist ? { code: 451, message: '4.7.1 greylisted, try later' } : undefined;
      },
    });
    const d = await bootDaemon(t, {
      db,
      env: {
        ...env,
        // Attempts at 0, 1, 6 and 11 minutes; the next (16) would be past 15: the 4th is the last.
        POSTERN_RETRY_SCHEDULE: '1m,5m',
        POSTERN_RETRY_MAX_AGE: '15m',
      },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const { dispatcher, get, send } = plainEmail(d, ws.live);
    const start = d.clock.now().getTime();
    const at = async (minutes: number) => {
      d.clock.set(start + minutes * MIN);
      await dispatcher.tick();
    };

    const id = await send('grey@example.net');
    await at(0);
    const deferredError = 'to grey@example.net: deferred (mx.example.net: 451 4.7.1 greylisted, try later) [greylisted]';
    t.match(await get(id), { status: 'dispatched', error: /451 4\.7\.1 greylisted, try later/ });
    t.equal(rcpts.length, 1, 'first attempt reached the MX');

    // Each retry comes on the schedule, not before.
    for (const [early, due, attempts] of [
      [0.9, 1, 2],
      [5.9, 6, 3],
    ] as const) {
      await at(early);
      t.equal(rcpts.length, attempts - 1, `no attempt before minute ${due}`);
      await at(due);
      t.equal(rcpts.length, attempts, `attempt ${attempts} at minute ${due}`);
      t.equal((await get(id)).status, 'dispatched', `still dispatched after attempt ${attempts}`);
    }
    await at(10.9);
    t.equal(rcpts.length, 3);
    t.equal((await get(id)).status, 'dispatched', 'not failed before the last attempt');

    // The 4th attempt is deferred too, and the next would be past maxAge: failed, with the reason.
    await at(11);
    t.equal(rcpts.length, 4);
    const m = await get(id);
    t.equal(m.status, 'failed');
    t.equal(m.error, 'retries expired: mx.example.net: 451 4.7.1 greylisted, try later');
    t.equal(m.timeline.filter((e: { e: string }) => e.e === 'deferred').length, 4, 'four deferred attempts');
    t.ok(
      m.timeline.some((e: { e: string }) => e.e === deferredError),
      'the MX answer is on the timeline',
    );
    t.equal(m.timeline.at(-1).e, 'failed', 'the last entry is the failure');
    const failed = (await d.app.db.selectFrom('events').select('data').where('type', '=', 'message.failed').execute()).filter(
      (e) => (JSON.parse(e.data) as { publicId: string }).publicId === id,
    );
    t.equal(failed.length, 1, 'message.failed recorded');
    t.same((await d.request('GET', '/v1/suppressions', { key: ws.live })).body.data, [], 'an expired retry suppresses nobody');

    // Nothing is tried again, even once the MX would accept.
    greylist = false;
    await at(60);
    await at(24 * 60);
    t.equal(rcpts.length, 4, 'no attempt after the message failed');
    t.equal(sink.received.length, 0);
    t.equal((await get(id)).status, 'failed');

    // Control: the same schedule delivers a message whose MX recovers before maxAge.
    greylist = true;
    const later = await send('grey@example.net');
    await at(24 * 60 + 0.5);
    t.equal((await get(later)).status, 'dispatched');
    greylist = false;
    await at(24 * 60 + 1.5);
    t.equal((await get(later)).status, 'delivered');
    t.equal(sink.received.length, 1);
  });
}
