// DKIM key rotation (docs/deliverability.md, "DKIM key rotation"), end to end: a domain verified on
// the loopback DNS server is rotated through the API; the new RSA and Ed25519 records are shown;
// signing does not switch until both are published on the loopback DNS server and found; then the
// messages delivered to a loopback MX carry two signatures under the new selectors, which dkimpy
// verifies against the records as published; the old selector is kept through the overlap and
// retired after it (the clock moves), and the API says to remove its record until it is gone.
// The schedule starts the next rotation on its own; the CLI starts one on demand.
import t from 'tap';
import { ManualClock } from '../helpers/clock.js';
import { bootDaemon } from '../helpers/daemon.js';
import { dashboardLogin } from '../helpers/dashboard.js';
import { testDatabases } from '../helpers/databases.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startWireChecker } from '../helpers/wire-check.js';

const DAY = 24 * 3600 * 1000;

interface Key {
  selector: string;
  algorithm: 'rsa' | 'ed25519';
  state: string;
  action: string;
  name: string;
  value: string;
  retireAt: string | null;
}

for (const db of testDatabases()) {
  t.test(`DKIM key rotation on ${db}`, async (t) => {
    const sink = await startSink(t);
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const clock = new ManualClock('2026-11-29T10:00:00.000Z');
    const d = await bootDaemon(t, {
      db,
      clock,
      env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(sink.port), POSTERN_DELIVERY_IDLE_TIMEOUT: '300ms' },
    });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const dispatcher = d.app.workers.find((w) => w.name === 'dispatcher')!;
    const checker = startWireChecker(t);
    // dkimpy is handed exactly what the loopback DNS server answers for a name.
    const publish = (name: string, value: string) => {
      dns.set(name, [{ type: 'TXT', data: value }]);
      checker.publish(name, value);
    };

    const claim = await d.request('POST', '/v1/inbound/domains', { key: ws.live, body: { domain: 'acme.example' } });
    t.equal(claim.status, 201);
    t.same(claim.body.dkim.keys, [], 'before its record is confirmed, the claim key is only in records');
    const id = claim.body.id as string;
    const first = (claim.body.records as { check: string; name: string; value: string }[]).find((r) => r.check === 'dkim')!;
    publish(first.name, first.value);
    const domain = async () => (await d.request('GET', `/v1/inbound/domains/${id}`, { key: ws.live })).body;
    const rotate = (body: unknown = {}) => d.request('POST', `/v1/inbound/domains/${id}/dkim/rotate`, { key: ws.live, body });

    // A fresh session each time: the clock moves past a session's lifetime.
    const warnings = async () => {
      const overview = await (await dashboardLogin(d)).request('GET', '/dashboard/api/overview');
      return (overview.body.warnings as { kind: string; message: string }[]).filter((w) => w.kind === 'dkim_rotation');
    };

    let sent = 0;
    const send = async () => {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: { to: `user${++sent}@example.net`, from: 'news@acme.example', channel: 'email', content: { subject: 'Hi', text: 'Hello' } },
      });
      t.equal(r.status, 202, JSON.stringify(r.body));
      const before = sink.received.length;
      await dispatcher.tick();
      t.equal(sink.received.length, before + 1, 'delivered to the loopback MX');
      return (await checker.facts(sink.received.at(-1)!.raw)).dkim;
    };

    t.test('a verified domain signs with its claim key and schedules its first rotation', async (t) => {
      const view = await domain();
      t.match(view.sending, { verified: true });
      t.match(view.dkim, {
        rotation: 'idle',
        lastRotatedAt: null,
        nextRotationAt: new Date(Date.parse(view.sending.verifiedAt) + 180 * DAY).toISOString(),
        keys: [{ selector: 'postern', algorithm: 'rsa', state: 'active', action: 'keep', name: first.name, value: first.value }],
      });
      const sigs = await send();
      t.match(sigs, [{ s: 'postern', a: 'rsa-sha256', verified: true }], 'one RSA signature that dkimpy verifies');
    });

    let next: Key[] = [];
    t.test('a rotation shows the records to publish; signing waits for them', async (t) => {
      t.equal((await rotate({ ed25519: 'yes' })).status, 422, 'a body that is not the schema is refused');
      const r = await rotate();
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.equal(r.body.dkim.rotation, 'pending');
      next = (r.body.dkim.keys as Key[]).filter((k) => k.action === 'publish');
      t.match(next, [
        {
          selector: 'postern-20261129-rsa',
          algorithm: 'rsa',
          state: 'pending',
          name: 'postern-20261129-rsa._domainkey.acme.example',
          value: /^v=DKIM1; k=rsa; p=MIIBIjAN/,
        },
        {
          selector: 'postern-20261129-ed25519',
          algorithm: 'ed25519',
          state: 'pending',
          name: 'postern-20261129-ed25519._domainkey.acme.example',
          value: /^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/,
        },
      ]);
      t.match((r.body.dkim.keys as Key[])[0], { selector: 'postern', state: 'active' }, 'the old key still signs');
      t.same(await warnings(), [
        {
          kind: 'dkim_rotation',
          message:
            'acme.example: publish the new DKIM records (postern-20261129-ed25519, postern-20261129-rsa); signing switches to them once they are found',
        },
      ]);
      const again = await rotate();
      t.equal(again.status, 409, 'one rotation at a time');
      t.equal(again.body.error.code, 'conflict');
      t.equal((await d.request('POST', '/v1/inbound/domains/nope/dkim/rotate', { key: ws.live, body: {} })).status, 404);

      t.match(await send(), [{ s: 'postern', a: 'rsa-sha256', verified: true }], 'not published: the old key signs');
      // One of the two records published: still not switched.
      publish(next[0].name, next[0].value);
      const half = await domain();
      t.match(half.dkim.rotation, 'pending');
      t.match(
        (half.dkim.keys as Key[]).map((k) => [k.selector, k.state]),
        [
          ['postern', 'active'],
          ['postern-20261129-ed25519', 'pending'],
          ['postern-20261129-rsa', 'verified'],
        ],
      );
      const sigs = await send();
      t.equal(sigs.length, 1);
      t.match(sigs, [{ s: 'postern', verified: true }], 'half published: the old key signs');
    });

    t.test('both published: signing switches, dkimpy verifies RSA and Ed25519 under the new selectors', async (t) => {
      // A record with another key under the new name is not the one asked for.
      dns.set(next[1].name, [{ type: 'TXT', data: next[1].value.replace(/p=.{4}/, 'p=AAAA') }]);
      t.equal((await domain()).dkim.rotation, 'pending', 'a record with another key does not count');
      publish(next[1].name, next[1].value);
      const view = await domain();
      t.equal(view.dkim.rotation, 'retiring');
      t.equal(view.dkim.lastRotatedAt, clock.now().toISOString());
      t.match(
        (view.dkim.keys as Key[]).map((k) => [k.selector, k.state, k.action, k.retireAt]),
        [
          ['postern-20261129-rsa', 'active', 'keep', null],
          ['postern-20261129-ed25519', 'active', 'keep', null],
          ['postern', 'retiring', 'keep', new Date(clock.now().getTime() + 7 * DAY).toISOString()],
        ],
      );
      t.match(view.records, [{ check: 'inboundMx' }, { check: 'dkim', name: next[0].name, value: next[0].value, verified: true }]);
      t.same(await warnings(), [], 'switched: nothing to do until the overlap ends');
      const sigs = await send();
      t.equal(sigs.length, 2, 'two DKIM-Signature fields');
      t.match(
        sigs.sort((a, b) => a.a.localeCompare(b.a)),
        [
          { d: 'acme.example', s: 'postern-20261129-ed25519', a: 'ed25519-sha256', verified: true },
          { d: 'acme.example', s: 'postern-20261129-rsa', a: 'rsa-sha256', verified: true },
        ],
        JSON.stringify(sigs),
      );
    });

    t.test('the old selector is kept through the overlap, then retired: the API says to remove it', async (t) => {
      clock.advance(7 * DAY - 60_000);
      t.match(await d.app.domains.rotateDkimKeys(), { started: 0, switched: 0, retired: 0 });
      t.match((await domain()).dkim.keys, [{}, {}, { selector: 'postern', state: 'retiring', action: 'keep' }], 'a minute before the end');
      clock.advance(60_000);
      t.match(await d.app.domains.rotateDkimKeys(), { retired: 1 });
      const view = await domain();
      t.equal(view.dkim.rotation, 'idle');
      t.match(view.dkim.keys[2], { selector: 'postern', state: 'retired', action: 'remove', purpose: /remove this record/ });
      t.match(view.dkim.keys[2].retiredAt, /^\d{4}-/);
      t.same(await warnings(), [{ kind: 'dkim_rotation', message: 'acme.example: remove the retired DKIM records (postern)' }]);
      t.match(await send(), [{ verified: true }, { verified: true }], 'signing is unchanged');
      dns.remove(first.name);
      t.same(
        ((await domain()).dkim.keys as Key[]).map((k) => k.selector),
        ['postern-20261129-rsa', 'postern-20261129-ed25519'],
        'removed from DNS: no longer listed',
      );
      t.same(await warnings(), []);
    });

    t.test('the schedule starts the next rotation; the CLI starts one on demand', async (t) => {
      const view = await domain();
      t.equal(view.dkim.nextRotationAt, new Date(Date.parse(view.dkim.lastRotatedAt) + 180 * DAY).toISOString());
      clock.set(Date.parse(view.dkim.nextRotationAt) - DAY);
      t.match(await d.app.domains.rotateDkimKeys(), { started: 0 }, 'not yet due');
      clock.set(Date.parse(view.dkim.nextRotationAt) + 60_000);
      t.match(await d.app.domains.rotateDkimKeys(), { started: 1 });
      const due = await domain();
      t.equal(due.dkim.rotation, 'pending');
      const pending = (due.dkim.keys as Key[]).filter((k) => k.state === 'pending');
      t.same(
        pending.map((k) => k.algorithm),
        ['rsa', 'ed25519'],
      );
      t.match(await d.app.domains.rotateDkimKeys(), { started: 0 }, 'one under way: no other');
      for (const k of pending) publish(k.name, k.value);
      t.match(await d.app.domains.rotateDkimKeys(), { switched: 1 }, 'published: the daily job switches');
      const sigs = await send();
      t.same(sigs.map((s) => [s.s, s.verified]).sort(), pending.map((k) => [k.selector, true]).sort());

      // On demand, the same day on the daemon's clock (the CLI's process has the wall clock's).
      const onDemand = await rotate({ ed25519: false });
      t.equal(onDemand.status, 200, JSON.stringify(onDemand.body));
      t.same(
        (onDemand.body.dkim.keys as Key[]).filter((k) => k.state === 'pending').map((k) => k.algorithm),
        ['rsa'],
        'ed25519: false: an RSA key only',
      );
      const rsa = (onDemand.body.dkim.keys as Key[]).find((k) => k.state === 'pending')!;
      const day = clock.now().toISOString().slice(0, 10).replaceAll('-', '');
      t.equal(rsa.selector, `postern-${day}-2-rsa`, 'a second rotation on the same day counts');
      publish(rsa.name, rsa.value);
      const switched = await domain();
      t.match(
        (switched.dkim.keys as Key[]).filter((k) => k.state === 'active').map((k) => k.selector),
        [rsa.selector],
        'the Ed25519 key retires with the RSA one: one signature again',
      );
      t.match(await send(), [{ s: rsa.selector, a: 'rsa-sha256', verified: true }]);

      // Past the overlap every replaced key is retired; a lookup that fails decides nothing.
      clock.advance(7 * DAY);
      t.match(await d.app.domains.rotateDkimKeys(), { retired: 4 });
      const retired = ((await domain()).dkim.keys as Key[]).filter((k) => k.action === 'remove');
      t.equal(retired.length, 4, 'still published: four records to remove');
      dns.breaks(retired[0].name);
      for (const k of retired.slice(1)) dns.remove(k.name);
      t.same(
        ((await domain()).dkim.keys as Key[]).filter((k) => k.action === 'remove').map((k) => k.selector),
        [retired[0].selector],
        'the one whose lookup fails (SERVFAIL) stays listed',
      );
    });

    t.test('a rotation waiting for its records can be abandoned', async (t) => {
      const started = await rotate();
      t.equal(started.body.dkim.rotation, 'pending');
      const signing = (started.body.dkim.keys as Key[]).filter((k) => k.state === 'active').map((k) => k.selector);
      const canceled = await d.request('DELETE', `/v1/inbound/domains/${id}/dkim/rotation`, { key: ws.live });
      t.equal(canceled.status, 200);
      t.notOk(
        (canceled.body.dkim.keys as Key[]).some((k) => k.state === 'pending'),
        'its keys are gone',
      );
      t.same(
        (canceled.body.dkim.keys as Key[]).filter((k) => k.state === 'active').map((k) => k.selector),
        signing,
        'the current keys keep signing',
      );
      const again = await d.request('DELETE', `/v1/inbound/domains/${id}/dkim/rotation`, { key: ws.live });
      t.equal(again.status, 404, 'nothing to abandon');
      const cli = await d.cli('domain', 'rotate-dkim', id, '--workspace', 'acme', '--no-ed25519');
      t.equal(cli.code, 0, cli.stderr);
      t.equal(cli.json.dkim.rotation, 'pending', 'a new one may start');
      t.same(
        (cli.json.dkim.keys as Key[]).filter((k) => k.state === 'pending').map((k) => k.algorithm),
        ['rsa'],
        '--no-ed25519: an RSA key only',
      );
      const cliCancel = await d.cli('domain', 'rotate-dkim', id, '--workspace', 'acme', '--cancel');
      t.equal(cliCancel.code, 0, cliCancel.stderr);
      t.notOk((cliCancel.json.dkim.keys as Key[]).some((k) => k.state === 'pending'));
    });

    t.test('the shared domain has no key to rotate', async (t) => {
      await d.request('POST', '/v1/inbound/addresses', { key: ws.live, body: {} });
      const shared = (await d.request('GET', '/v1/inbound/domains', { key: ws.live })).body.domains[0];
      t.equal(shared.dkim, null);
      const r = await d.request('POST', `/v1/inbound/domains/${shared.id}/dkim/rotate`, { key: ws.live, body: {} });
      t.equal(r.status, 409);
      t.equal(r.body.error.code, 'shared_domain');
    });
  });
}
