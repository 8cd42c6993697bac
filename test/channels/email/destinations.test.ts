// Bounce rules and destinations against a real loopback MX (docs/email-delivery.md, "Bounce rules"
// and "Destinations"): each kind of refusal big receivers send is judged by config/bounces.json —
// failed or deferred, suppressed or not, its category on the timeline; a destination that
// rate-limits is backed off (the next message waits without a connection) until a delivery goes
// through, then sent to at a lowered rate (adaptive-backoff.test.ts has more); holds (API for a workspace, CLI for everyone) defer without a connection and resuming
// releases at once; purge cancels queued and fails deferred mail; the counts per destination.
import t from 'tap';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { until } from '../../helpers/until.js';

const REPLIES: Record<string, { code: number; message: string }> = {
  unknown: { code: 550, message: '5.1.1 The email account that you tried to reach does not exist.' },
  full: { code: 452, message: '4.2.2 The email account that you tried to reach is over quota.' },
  blocked: { code: 550, message: '5.7.1 Service unavailable, Client host [192.0.2.1] blocked using Spamhaus' },
  throttled: { code: 421, message: '4.7.28 Our system has detected an unusual rate of unsolicited mail' },
  spam: { code: 554, message: '5.7.1 Message rejected as spam by Content Filtering' },
};
const DOMAINS = ['unknown', 'full', 'blocked', 'throttled', 'spam', 'fine', 'held', 'box'].map((d) => `${d}.example`);

for (const db of testDatabases()) {
  t.test(`bounce rules and destinations on ${db}`, async (t) => {
    let throttling = true;
    const sink = await startSink(t, {
      rcpt: (a) => {
        const kind = a.split('@')[1].replace('.example', '');
        if (kind === 'throttled' && !throttling) return undefined;
        return REPLIES[kind];
      },
    });
    const zone: Parameters<typeof startDnsServer>[0] = { 'mx.example.net': [{ type: 'A', data: '127.0.0.1' }] };
    for (const d of DOMAINS) zone[d] = [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }];
    const dns = await startDnsServer(zone);
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, {
      db,
      env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(sink.port), POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms' },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    let n = 0;
    const accept = async (domain: string) => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to: `user${++n}@${domain}`, channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      t.equal(r.status, 202);
      return r.body.id as string;
    };
    const get = async (id: string) => (await d.request('GET', `/v1/messages/${id}`, { key: ws.live })).body;
    const deliver = async (domain: string) => {
      const id = await accept(domain);
      await dispatcher.tick();
      return { ...(await get(id)), id };
    };
    const notes = (m: { timeline: { e: string }[] }) => m.timeline.map((e) => e.e).join('\n');
    const suppressed = async () =>
      ((await d.request('GET', '/v1/suppressions', { key: ws.live })).body.data as { address: string }[]).map((s) => s.address);

    t.test('each refusal judged by the rules, its category on the timeline', async (t) => {
      const unknown = await deliver('unknown.example');
      t.match(unknown, { status: 'failed', error: /5\.1\.1/ });
      t.match(notes(unknown), /: failed \(mx\.example\.net: 550 5\.1\.1 .*\) \[unknown_user\]/);
      const full = await deliver('full.example');
      t.match(full, { status: 'dispatched' });
      t.match(notes(full), /: deferred \(.*4\.2\.2.*\) \[mailbox_full\]/);
      const blocked = await deliver('blocked.example');
      t.match(blocked, { status: 'failed' });
      t.match(notes(blocked), /\[policy\]$/m);
      const spam = await deliver('spam.example');
      t.match(spam, { status: 'failed' });
      t.match(notes(spam), /\[spam\]$/m);
      t.same(
        (await suppressed()).filter((a) => a.endsWith('.example')),
        [`user1@unknown.example`],
        'only the unknown user is suppressed: a blocklisting or a spam verdict says nothing of the address',
      );
    });

    t.test('a destination that rate-limits is backed off until a delivery goes through', async (t) => {
      const first = await deliver('throttled.example');
      t.match(notes(first), /\[rate_limited\]/);
      const connections = sink.connections();
      const second = await deliver('throttled.example');
      t.equal(sink.connections(), connections, 'no connection while backing off');
      t.match(second, { status: 'dispatched', error: /backing off from throttled\.example until .* \(rate_limited: / });
      const view = (await d.request('GET', '/v1/destinations/throttled.example', { key: ws.live })).body;
      t.match(view, { domain: 'throttled.example', deferred: 1, backoffUntil: /^\d{4}-/, backoffReason: /^rate_limited: / });
      t.match(await get(first.id), { status: 'dispatched' });
      // A minute later the destination accepts again: the back-off ends with that delivery.
      throttling = false;
      d.clock.advance(61_000);
      const third = await accept('throttled.example');
      // The pause is over; the destination is now sent to at its lowered rate (adaptive-backoff.ts:
      // 5 a minute, one message per 12 s), so the three go out one slot after the other.
      const ids = [first.id, second.id, third];
      for (let step = 0; step < 20; step++) {
        await dispatcher.tick();
        if ((await Promise.all(ids.map(get))).every((m) => m.status === 'delivered')) break;
        d.clock.advance(12_000);
      }
      for (const id of ids) t.match(await get(id), { status: 'delivered' });
      // All three delivered, the back-off counted once; the lowered rate stays until it climbs back.
      t.match((await d.request('GET', '/v1/destinations/throttled.example', { key: ws.live })).body, {
        backoffUntil: null,
        delivered: 3,
        deferred: 1,
        adaptiveBackoff: { rate: 5, targetRate: 10, connections: 2, throttles: 1, lastAnswer: /421 4\.7\.28/ },
      });
    });

    t.test('the counts per destination', async (t) => {
      await d.app.destinations.flush();
      const page = (await d.request('GET', '/v1/destinations?limit=3', { key: ws.live })).body;
      t.same(
        page.data.map((x: { domain: string }) => x.domain),
        ['blocked.example', 'full.example', 'spam.example'],
      );
      t.equal(page.next, 'spam.example');
      const rest = (await d.request('GET', `/v1/destinations?after=${page.next}`, { key: ws.live })).body;
      t.match(rest, {
        data: [
          { domain: 'throttled.example', delivered: 3, deferred: 1 },
          { domain: 'unknown.example', bounced: 1, lastCategory: 'unknown_user', lastError: /550 5\.1\.1/ },
        ],
        next: null,
      });
      t.equal((await d.request('GET', '/v1/destinations?limit=0', { key: ws.live })).status, 400);
      t.equal((await d.request('GET', '/v1/destinations/not_a_domain', { key: ws.live })).status, 400);
    });

    t.test('a workspace holds a destination, then resumes it; purge drops what waits', async (t) => {
      t.match(
        (await d.request('POST', '/v1/destinations/held.example/suspend', { key: ws.live, body: { reason: 'we are listed' } })).body,
        {
          suspended: 'workspace',
        },
      );
      const connections = sink.connections();
      const held = await deliver('held.example');
      t.match(held, { status: 'dispatched', error: /delivery to held\.example is suspended \(we are listed\)/ });
      t.equal(sink.connections(), connections, 'held mail opens no connection');
      t.match((await d.request('POST', '/v1/destinations/held.example/resume', { key: ws.live })).body, { suspended: null });
      await dispatcher.tick();
      t.match(await get(held.id), { status: 'delivered' }, 'resuming releases it at once');

      // Purge: one deferred (held), one still queued.
      await d.request('POST', '/v1/destinations/held.example/suspend', { key: ws.live, body: {} });
      const deferred = await deliver('held.example');
      t.equal(deferred.status, 'dispatched');
      // Scheduled an hour ahead, so the running dispatcher leaves it waiting.
      const scheduled = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: {
          to: 'later@held.example',
          channel: 'email',
          content: { subject: 'Hi', text: 'Hello' },
          scheduledAt: new Date(d.clock.now().getTime() + 3_600_000).toISOString(),
        },
      });
      t.equal(scheduled.status, 202);
      const queued = scheduled.body.id as string;
      t.equal((await d.request('POST', '/v1/destinations/held.example/purge', { key: ws.live, body: { status: 'bogus' } })).status, 422);
      const purged = await d.request('POST', '/v1/destinations/held.example/purge', { key: ws.live, body: {} });
      t.same(purged.body, { canceled: 1, failed: 1 });
      t.match(await get(deferred.id), { status: 'failed', error: /^purged: the queue for held\.example was purged through the API/ });
      t.match(await get(queued), { status: 'canceled' });
    });

    t.test('the operator holds a destination for every workspace (CLI), and purges it', async (t) => {
      const other = await d.workspace('other', { plan: 'pro' });
      const suspend = await d.cli('queue', 'suspend', 'box.example', '--reason', 'blocklisted at Spamhaus');
      t.equal(suspend.code, 0, suspend.stderr);
      // A daemon sees another process's hold on its next read (it reads them every two seconds);
      // how soon is not held here, a loaded machine may be late.
      t.ok(await until("the daemon to read the CLI's hold", () => d.app.destinations.gate(ws.id, 'box.example')), 'the hold is seen');
      const mine = await deliver('box.example');
      t.match(mine, { status: 'dispatched', error: /suspended \(blocklisted at Spamhaus\)/ });
      const theirs = await d.request('POST', '/v1/send-raw', {
        key: other.live,
        body: { to: 'x@box.example', channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      await dispatcher.tick();
      t.match(
        (await d.request('GET', `/v1/messages/${theirs.body.id}`, { key: other.live })).body,
        { status: 'dispatched' },
        'every workspace',
      );
      t.match((await d.request('GET', '/v1/destinations/box.example', { key: other.live })).body, { suspended: 'operator' });
      const purge = await d.cli('queue', 'purge', '--domain', 'box.example', '--status', 'deferred');
      t.equal(purge.code, 0, purge.stderr);
      t.match(purge.json, { domain: 'box.example', canceled: 0, failed: 2 });
      const resume = await d.cli('queue', 'resume', 'box.example');
      t.match(resume.json, { lifted: true });
      const list = await d.cli('queue', 'destinations', '--workspace', 'acme');
      t.equal(list.code, 0, list.stderr);
      t.ok((list.json as { domain: string }[]).some((x) => x.domain === 'throttled.example'));
      t.equal((await d.cli('queue', 'suspend', 'not a domain')).code, 2);
    });
  });
}
