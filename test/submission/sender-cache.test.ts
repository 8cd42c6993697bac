// Submission's check of the sender's domain (MAIL FROM, then the From header) goes through the
// two-second cache of domain reads (submission/submission.ts): a domain removed on this node is
// refused from the next MAIL FROM on, one removed behind the daemon's back (another process that
// publishes nothing) within DOMAIN_CACHE_MS of the daemon's clock, and one removed through another
// node of a cluster as soon as that node's announcement arrives, whatever the clock says.
import t from 'tap';
import { DOMAIN_CACHE_MS } from '../../src/domains/read-cache.js';
import { SubmissionRefused } from '../../src/submission/refusals.js';
import { createSubmission, type Submission } from '../../src/submission/submission.js';
import type { Principal } from '../../src/workspaces/keys.js';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { freshPostgres, testDatabases } from '../helpers/databases.js';
import { addVerifiedDomain } from '../helpers/smtp-sink.js';
import { until } from '../helpers/until.js';

const pg = process.env.POSTERN_TEST_DATABASE_URL;

function submissionOf(d: TestDaemon): Submission {
  return createSubmission({
    ...d.app,
    outbound: d.app.outbound,
    suppressions: d.app.suppressions,
    credentials: { authenticate: () => Promise.reject(new Error('not used here')) },
  });
}

const refusedAt = async (s: Submission, p: Principal, address: string) =>
  s.mailFrom(p, address).then(
    () => null,
    (err: Error) => (err instanceof SubmissionRefused ? err.refusal.reason : String(err)),
  );

for (const db of testDatabases()) {
  t.test(`the sender's domain, cached, on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const p = (await d.app.keys.authenticate(ws.test))!;
    const s = submissionOf(d);

    t.equal(await refusedAt(s, p, 'app@acme.example'), 'sender-not-allowed', 'not a sending domain yet');
    // Verified behind the cache's back (as the CLI in another process would): seen once the TTL has passed.
    await addVerifiedDomain(d.app, ws.id, 'acme.example');
    d.clock.advance(DOMAIN_CACHE_MS - 1);
    t.equal(await refusedAt(s, p, 'app@acme.example'), 'sender-not-allowed', 'the refusal is kept for the TTL');
    d.clock.advance(1);
    t.equal(await refusedAt(s, p, 'app@ACME.example'), null, 'and read again once it has passed');

    // Removed behind the cache's back: accepted for at most DOMAIN_CACHE_MS more, then refused.
    await d.app.db.updateTable('domains').set({ deleted_at: d.clock.now().toISOString() }).where('domain', '=', 'acme.example').execute();
    d.clock.advance(DOMAIN_CACHE_MS - 1);
    t.equal(await refusedAt(s, p, 'app@acme.example'), null, 'kept within the TTL');
    d.clock.advance(1);
    t.equal(await refusedAt(s, p, 'app@acme.example'), 'sender-not-allowed', 'refused once it has passed');

    // Removed through the domain store, which announces it: refused at once, MAIL FROM and From header alike.
    await d.app.db.updateTable('domains').set({ deleted_at: null }).where('domain', '=', 'acme.example').execute();
    d.app.bus.publish('domains.changed', null);
    t.equal(await refusedAt(s, p, 'app@acme.example'), null, 'verified again');
    const row = await d.app.db.selectFrom('domains').select('id').where('domain', '=', 'acme.example').executeTakeFirstOrThrow();
    await d.app.domains.remove(ws.id, row.id);
    t.equal(await refusedAt(s, p, 'app@acme.example'), 'sender-not-allowed', 'a removed domain is refused at MAIL FROM at once');
    const raw = Buffer.from('From: app@acme.example\r\nTo: one@example.net\r\nSubject: hi\r\n\r\nhello\r\n');
    const after = await s.submit(p, { mailFrom: 'app@acme.example', rcptTo: ['one@example.net'] }, raw).then(
      () => null,
      (err: Error) => (err instanceof SubmissionRefused ? err.refusal.reason : String(err)),
    );
    t.equal(after, 'sender-not-allowed', 'and at the From header');

    // One workspace's answer is not another's.
    const other = await d.workspace('other', { plan: 'pro' });
    await addVerifiedDomain(d.app, other.id, 'other.example');
    d.app.bus.publish('domains.changed', null);
    t.equal(await refusedAt(s, p, 'app@other.example'), 'sender-not-allowed', "acme may not send from other's domain");
    t.equal(await refusedAt(s, (await d.app.keys.authenticate(other.test))!, 'app@other.example'), null, 'other may');
  });
}

t.test(
  'a domain removed through one node is refused by the other at once',
  { skip: !pg && 'needs POSTERN_TEST_DATABASE_URL' },
  async (t) => {
    const db = await freshPostgres();
    t.teardown(() => db.drop());
    const a = await bootDaemon(t, { databaseUrl: db.url });
    const b = await bootDaemon(t, { databaseUrl: db.url });
    const ws = await a.workspace('acme', { plan: 'pro' });
    await addVerifiedDomain(a.app, ws.id, 'acme.example');
    const p = (await a.app.keys.authenticate(ws.test))!;
    const s = submissionOf(a);
    t.equal(await refusedAt(s, p, 'app@acme.example'), null, 'node a accepts the sender, and keeps the answer');
    const row = await b.app.db.selectFrom('domains').select('id').where('domain', '=', 'acme.example').executeTakeFirstOrThrow();
    await b.app.domains.remove(ws.id, row.id);
    // Node a's clock stands still, so its cache never ages out here: only b's word can clear it.
    t.ok(
      await until('node a to refuse the removed domain', async () => (await refusedAt(s, p, 'app@acme.example')) === 'sender-not-allowed'),
      'node a refuses it without its 2 s cache running out',
    );
  },
);
