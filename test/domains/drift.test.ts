// A confirmed record changed or removed later: the domain keeps its capabilities (mail keeps
// flowing), its record shows `stillPublished: false`, and the dashboard's Overview warns until the
// record is back. Opening the domain re-checks it; the daily job re-checks every domain.
import t from 'tap';
import { testDatabases } from '../helpers/databases.js';
import { dashboardLogin } from '../helpers/dashboard.js';
import { setup } from '../helpers/inbound.js';

for (const db of testDatabases()) {
  t.test(`a confirmed record no longer published is a warning, not a lost domain (${db})`, async (t) => {
    const env = await setup(t, { db, plan: 'pro' });
    const { d, dns } = env;
    const req = (method: string, p: string, body?: unknown) => d.request(method, `/v1/inbound${p}`, { key: env.ws.live, body });
    const claim = await req('POST', '/domains', { domain: 'corp.example' });
    t.equal(claim.status, 201);
    t.match(
      claim.body.records,
      [
        { check: 'inboundMx', stillPublished: null },
        { check: 'dkim', stillPublished: null },
      ],
      'not confirmed: nothing to say',
    );
    const dkim = claim.body.records.find((r: any) => r.check === 'dkim');
    dns.set('corp.example', [{ type: 'MX', data: { preference: 10, exchange: 'mx.postern.test' } }]);
    dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
    const id = claim.body.id as string;
    const verified = (await req('GET', `/domains/${id}`)).body;
    t.equal(verified.status, 'verified');
    t.match(verified.records, [{ stillPublished: true }, { stillPublished: true }]);

    const dash = await dashboardLogin(d);
    const warnings = async () =>
      (await dash.request('GET', '/dashboard/api/overview')).body.warnings as { kind: string; message: string }[];
    t.same(await warnings(), [], 'no warning while the records are published');

    // The MX moves elsewhere: opening the domain finds it.
    dns.set('corp.example', [{ type: 'MX', data: { preference: 10, exchange: 'aspmx.l.google.com' } }]);
    const moved = (await req('GET', `/domains/${id}`)).body;
    t.match(moved, { status: 'verified', receiving: { verified: true } }, 'the domain keeps receiving');
    t.match(moved.records, [
      { check: 'inboundMx', verified: true, stillPublished: false },
      { check: 'dkim', stillPublished: true },
    ]);
    t.match(await warnings(), [
      { kind: 'dns_mismatch', message: /^corp\.example: the MX record no longer matches what Postern published/ },
    ]);

    // The daily job: the MX is back, the DKIM record removed.
    dns.set('corp.example', [{ type: 'MX', data: { preference: 10, exchange: 'mx.postern.test' } }]);
    dns.remove(dkim.name);
    t.equal(await d.app.domains.recheckConfirmed(), 1, 'one domain drifts');
    t.match(await warnings(), [{ kind: 'dns_mismatch', message: /the DKIM record no longer matches/ }]);
    t.notMatch(JSON.stringify(await warnings()), /MX record/);
    dns.set(dkim.name, [{ type: 'TXT', data: dkim.value }]);
    t.equal(await d.app.domains.recheckConfirmed(), 0);
    t.same(await warnings(), [], 'both back: no warning');
    t.ok(
      d.logs.some((l) => l.includes('no longer published')),
      'the drift is logged',
    );
  });
}
