// Warm-up through the real dispatcher and a loopback MX, on the injectable clock: a source on
// 127.0.0.2 with the curve 2, 4, 8. Mail over the day's allowance is deferred (not failed) to the
// next day, spread over `spreadOver`, and goes out once the clock reaches it; a bounce rate over
// the threshold pauses the ramp and steps it back; when the bounces leave the window the ramp
// resumes on its own and climbs again the next day. A complaint that comes back over SMTP counts
// for the pair that sent the message. An MX answering 451 pauses the ramp on the deferral rate, as
// the dashboard's Sources & warm-up page shows it, until the deferrals leave the window.
import t, { type Test } from 'tap';
import { ManualClock } from '../../helpers/clock.js';
import { tripReason } from '../../../src/channels/email/warm-up.js';
import { bootDaemon, plainEmail } from '../../helpers/daemon.js';
import { dashboardLogin } from '../../helpers/dashboard.js';
import { testDatabases, type TestDb } from '../../helpers/databases.js';
import { sendRaw } from '../../helpers/inbound.js';
import { buildArf } from '../../helpers/reports.js';
import { startRemoteMx, type SinkOptions } from '../../helpers/smtp-sink.js';

const SETTINGS = { minSample: 4, maxBounceRate: 0.3, maxComplaintRate: 0.01, maxDeferralRate: 0.5 };

t.test('what trips the ramp', async (t) => {
  t.equal(tripReason({ delivered: 1, bounced: 2, deferred: 0, complained: 0 }, SETTINGS), null, 'too few answers decide nothing');
  t.equal(tripReason({ delivered: 7, bounced: 3, deferred: 0, complained: 0 }, SETTINGS), null, 'at the threshold: not over it');
  t.equal(tripReason({ delivered: 6, bounced: 4, deferred: 0, complained: 0 }, SETTINGS), 'bounce rate 40.0 % over 30.0 %');
  t.equal(tripReason({ delivered: 50, bounced: 0, deferred: 0, complained: 1 }, SETTINGS), 'complaint rate 2.0 % over 1.0 %');
  t.equal(tripReason({ delivered: 4, bounced: 0, deferred: 6, complained: 0 }, SETTINGS), 'deferral rate 60.0 % over 50.0 %');
});

type Rcpt = SinkOptions['rcpt'];

// A daemon whose one source, a on 127.0.0.2, warms up on the curve 2, 4, 8 from 2026-03-02 10:00
// (a 6 h window, decided from 4 answers), in front of a loopback MX answering as `rcpt` says; the
// trigger's threshold is the test's own.
async function bootWarmingUp(t: Test, db: TestDb, rcpt: Rcpt, threshold: Record<string, string>) {
  const { sink, env } = await startRemoteMx(t, { rcpt });
  const clock = new ManualClock('2026-03-02T10:00:00Z');
  const d = await bootDaemon(t, {
    db,
    clock,
    env: {
      ...env,
      POSTERN_DELIVERY_SOURCES: JSON.stringify({ a: { address: '127.0.0.2', ehlo: 'a.postern.test' } }),
      POSTERN_DELIVERY_POOLS: JSON.stringify({ main: ['a'] }),
      POSTERN_DELIVERY_POOL_ASSIGNMENT: JSON.stringify({ default: 'main', workspaces: {}, domains: {} }),
      POSTERN_DELIVERY_WARM_UP_ENABLED: 'true',
      POSTERN_DELIVERY_WARM_UP_CURVE: '2,4,8',
      POSTERN_DELIVERY_WARM_UP_WINDOW: '6h',
      POSTERN_DELIVERY_WARM_UP_MIN_SAMPLE: '4',
      ...threshold,
      POSTERN_DELIVERY_WARM_UP_SPREAD_OVER: '1h',
    },
  });
  const ws = await d.workspace('acme', { plan: 'pro' });
  const { dispatcher, get, send } = plainEmail(d, ws.live);
  const dueAt = async (id: string) =>
    (await d.app.db.selectFrom('messages').select('due_at').where('public_id', '=', id).executeTakeFirstOrThrow()).due_at!;
  return { sink, clock, d, dispatcher, get, send, dueAt };
}

for (const db of testDatabases()) {
  t.test(`warm-up of a source on ${db}`, async (t) => {
    const { sink, clock, d, dispatcher, get, send, dueAt } = await bootWarmingUp(
      t,
      db,
      (a) => (a.startsWith('bad') ? { code: 550, message: '5.1.1 no such user' } : undefined),
      { POSTERN_DELIVERY_WARM_UP_MAX_BOUNCE_RATE: '0.3' },
    );
    const warmUp = d.app.warmUp!;
    const at = async (iso: string) => {
      clock.set(iso);
      await dispatcher.tick();
    };
    const schedule = async () => {
      const all = await warmUp.list();
      t.equal(all.length, 1, 'one schedule: source a for the default sending domain');
      return all[0];
    };

    // Day 1: an allowance of 2.
    const first = [await send('u1@example.net'), await send('u2@example.net'), await send('u3@example.net')];
    await at('2026-03-02T10:00:00Z');
    t.equal(sink.received.length, 2, 'two messages on the first day');
    t.ok(
      sink.received.every((r) => r.remoteAddress === '127.0.0.2' && r.ehlo === 'a.postern.test'),
      'from the source',
    );
    const late = [];
    for (const id of first) if ((await get(id)).status !== 'delivered') late.push(id);
    t.equal(late.length, 1);
    const waiting = await get(late[0]);
    t.equal(waiting.status, 'dispatched', 'deferred, not failed');
    t.match(waiting.error, /^warm-up of a for mx\.postern\.test: today's allowance of 2 is used; next try 2026-03-03T00:/);
    const due = Date.parse(await dueAt(late[0]));
    t.ok(due >= Date.parse('2026-03-03T00:00:00Z') && due < Date.parse('2026-03-03T01:00:00Z'), 'due within the next day spread');
    t.match(await schedule(), {
      source: 'a',
      sendingDomain: 'mx.postern.test',
      step: 0,
      steps: 3,
      allowance: 2,
      used: 2,
      next: { day: '2026-03-03', allowance: 4 },
      pausedReason: null,
    });

    // A complaint about a delivered message, as a mailbox provider's feedback loop sends it to the
    // return path: counted for the pair that sent the message.
    const complained = sink.received[0];
    const reply = await sendRaw(
      d.smtpPort,
      { from: '', to: [complained.from] },
      await buildArf(complained.from, complained.to[0], complained.raw.toString('latin1')),
    );
    t.match(reply, /^250 /);
    t.match((await schedule()).recent, { delivered: 2, complained: 1 });

    await at('2026-03-02T23:59:00Z');
    t.equal(sink.received.length, 2, 'nothing more the same day');

    // Day 2: the deferred message goes out; the allowance is 4.
    await at('2026-03-03T01:00:00Z');
    t.equal(sink.received.length, 3);
    t.equal((await get(late[0])).status, 'delivered');
    t.match(await schedule(), { step: 1, allowance: 4, used: 1, next: { allowance: 8 } });

    // Three hard bounces out of the four answers in the 6 h window (day 1's deliveries have left it):
    // 75 % is over 30 %; the ramp pauses and steps back to 2.
    const bad = [await send('bad1@example.net'), await send('bad2@example.net'), await send('bad3@example.net')];
    await at('2026-03-03T01:00:00Z');
    for (const id of bad) t.equal((await get(id)).status, 'failed');
    const paused = await schedule();
    t.match(paused, { step: 0, allowance: 2, used: 4, next: null, pausedReason: 'bounce rate 75.0 % over 30.0 %' });
    t.ok(paused.pausedAt);
    const held = await send('u4@example.net');
    await at('2026-03-03T01:00:00Z');
    t.match((await get(held)).error, /today's allowance of 2 is used/, 'the stepped-back allowance holds');

    // Day 3, the bounces out of the 6 h window: resumed on its own at the stepped-back allowance.
    await at('2026-03-04T02:00:00Z');
    t.equal((await get(held)).status, 'delivered');
    t.match(await schedule(), { step: 0, allowance: 2, used: 1, pausedReason: null, next: { day: '2026-03-05', allowance: 4 } });

    // Day 4: climbing again.
    await at('2026-03-05T02:00:00Z');
    t.match(await schedule(), { step: 1, allowance: 4, used: 0 });
    // Day 6: past the curve, the pair is warm.
    await at('2026-03-07T02:00:00Z');
    t.match(await schedule(), { step: 3, allowance: null, next: null });
    const free = [await send('w1@example.net'), await send('w2@example.net'), await send('w3@example.net'), await send('w4@example.net')];
    await at('2026-03-07T02:00:00Z');
    for (const id of free) t.equal((await get(id)).status, 'delivered', 'no limit once warm');

    // The operator's override: back to step 2 of 3 (4 a day), then refused steps and sources.
    const set = await d.cli('warm-up', 'set', '--source', 'a', '--domain', 'mx.postern.test', '--step', '2');
    t.equal(set.code, 0, set.stderr);
    t.match(JSON.parse(set.stdout), { step: 1, allowance: 4, pausedReason: null });
    const listed = await d.cli('warm-up', 'list');
    t.match(JSON.parse(listed.stdout), [{ source: 'a', sendingDomain: 'mx.postern.test', allowance: 4 }]);
    // An hour on: every node has looked at the pair again since it was warm.
    await at('2026-03-07T03:00:00Z');
    const limited = [];
    for (let i = 0; i < 5; i++) limited.push(await send(`v${i}@example.net`));
    await dispatcher.tick();
    const went = [];
    for (const id of limited) if ((await get(id)).status === 'delivered') went.push(id);
    t.equal(went.length, 4, 'the allowance of the step set holds again');
    const badStep = await d.cli('warm-up', 'set', '--source', 'a', '--domain', 'mx.postern.test', '--step', '4');
    t.equal(badStep.code, 2);
    t.match(badStep.stderr, /--step must be 1 to 3/);
    t.equal((await d.cli('warm-up', 'set', '--source', 'nope', '--domain', 'x.example', '--warm')).code, 2, 'an unknown source');
  });

  t.test(`a deferral rate over the threshold pauses the ramp on ${db}`, async (t) => {
    // The MX answers 451 to every recipient while `deferring`, then accepts again.
    let deferring = true;
    const { sink, clock, d, dispatcher, get, send, dueAt } = await bootWarmingUp(
      t,
      db,
      () => (deferring ? { code: 451, message: '4.3.0 try later' } : undefined),
      { POSTERN_DELIVERY_WARM_UP_MAX_DEFERRAL_RATE: '0.25' },
    );
    // Mail a send woke the dispatcher for is settled before the clock moves: a clock moved past the
    // lease of a message in flight would let it be claimed twice.
    const at = async (iso: string) => {
      await dispatcher.tick();
      clock.set(iso);
      await dispatcher.tick();
    };
    // The schedule as the dashboard's Sources & warm-up page reads it (a fresh session each time:
    // the clock moves by hours).
    const schedule = async () => {
      const owner = await dashboardLogin(d);
      const page = await owner.request('GET', '/dashboard/api/warm-up');
      t.equal(page.status, 200);
      t.equal(page.body.data.length, 1, 'one schedule: source a for the default sending domain');
      return page.body.data[0];
    };

    // The operator put the pair at the second step (4 a day).
    await d.app.warmUp!.set('a', 'mx.postern.test', 1);
    const ids = [await send('u1@example.net'), await send('u2@example.net'), await send('u3@example.net'), await send('u4@example.net')];
    await at('2026-03-02T10:00:00Z');
    t.equal(sink.received.length, 0, 'the MX took none');
    for (const id of ids) {
      const m = await get(id);
      t.equal(m.status, 'dispatched', 'deferred by the MX, not failed');
      t.match(m.error, /451 4\.3\.0 try later/);
    }

    // Four deferrals out of four answers (minSample 4): 100 % is over 25 %; the ramp pauses and
    // steps back to the first step.
    const paused = await schedule();
    t.match(paused, {
      source: 'a',
      sendingDomain: 'mx.postern.test',
      step: 0,
      allowance: 2,
      used: 4,
      next: null,
      pausedReason: 'deferral rate 100.0 % over 25.0 %',
      recent: { delivered: 0, bounced: 0, deferred: 4, complained: 0, windowHours: 6 },
    });
    t.ok(paused.pausedAt);

    // The MX accepts again: the retries go (each was counted today already) and are delivered, but
    // four deferrals of eight answers (50 %) are still over the threshold: still paused.
    deferring = false;
    let due = '';
    for (const id of ids) if ((await dueAt(id)) > due) due = await dueAt(id);
    t.ok(due < '2026-03-02T11:00', `retried within the hour (${due})`);
    await at(due);
    t.equal(sink.received.length, 4);
    for (const id of ids) t.equal((await get(id)).status, 'delivered');
    t.match(await schedule(), {
      step: 0,
      pausedReason: 'deferral rate 100.0 % over 25.0 %',
      recent: { delivered: 4, deferred: 4 },
    });
    await at('2026-03-02T15:59:00Z');
    t.match(await schedule(), { pausedReason: 'deferral rate 100.0 % over 25.0 %' }, 'the 10:00 hour is still in the 6 h window');

    // The window moves past the deferrals: resumed on its own, at the stepped-back allowance, and
    // climbing again from the next day.
    await at('2026-03-02T16:00:00Z');
    t.match(await schedule(), {
      step: 0,
      allowance: 2,
      pausedReason: null,
      pausedAt: null,
      next: { day: '2026-03-03', allowance: 4 },
      recent: { delivered: 0, deferred: 0 },
    });
    const dayTwo = [await send('v1@example.net'), await send('v2@example.net'), await send('v3@example.net')];
    await at('2026-03-03T01:00:00Z');
    for (const id of dayTwo) t.equal((await get(id)).status, 'delivered', 'three of the allowance of 4');
    t.match(await schedule(), { step: 1, allowance: 4, used: 3, pausedReason: null });
  });
}
