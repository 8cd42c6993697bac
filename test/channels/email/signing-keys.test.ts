// The signing keys read for every email (channels/email/signing-keys.ts): kept for two seconds of
// the daemon's clock, forgotten at once when this node changes a domain, so a domain verified or
// removed here signs (or stops signing) from the next message on, and one changed by another
// process signs once the two seconds have passed.
import t from 'tap';
import { createSigningKeys } from '../../../src/channels/email/signing-keys.js';
import { DOMAIN_CACHE_MS } from '../../../src/domains/read-cache.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { addVerifiedDomain } from '../../helpers/smtp-sink.js';

for (const db of testDatabases()) {
  t.test(`signing keys on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const keys = createSigningKeys({ db: d.app.db, bus: d.app.bus, box: d.app.box, clock: d.clock });

    t.equal(await keys(ws.id, 'acme.example', 'postern'), null, 'no sending domain yet');
    // Written behind the cache's back (as another process would): not seen within the TTL.
    await addVerifiedDomain(d.app, ws.id, 'acme.example');
    d.clock.advance(DOMAIN_CACHE_MS - 1);
    t.equal(await keys(ws.id, 'acme.example', 'postern'), null, 'the answer is kept for the TTL');
    d.clock.advance(1);
    const seen = await keys(ws.id, 'acme.example', 'postern');
    t.match(seen, { domain: 'acme.example', selector: 'postern' }, 'and read again once it has passed');

    // Removed behind the cache's back, then a change on this node is announced: the next message sees it.
    await d.app.db.updateTable('domains').set({ deleted_at: d.clock.now().toISOString() }).where('domain', '=', 'acme.example').execute();
    t.equal(await keys(ws.id, 'acme.example', 'postern'), seen, 'kept again');
    d.app.bus.publish('domains.changed', null);
    t.equal(await keys(ws.id, 'acme.example', 'postern'), null, 'the announcement drops it at once');
    await d.app.db.updateTable('domains').set({ deleted_at: null }).where('domain', '=', 'acme.example').execute();
    d.app.bus.publish('domains.changed', null);
    const key = await keys(ws.id, 'ACME.example', 'postern');
    t.match(key, { domain: 'acme.example', selector: 'postern', privateKey: /BEGIN PRIVATE KEY/ });
    t.equal(await keys(ws.id, 'acme.example', 'postern'), key, 'one read for the messages that follow');

    // Removed through the domain store: it announces the change, and signing stops at once.
    const row = await d.app.db.selectFrom('domains').select('id').where('domain', '=', 'acme.example').executeTakeFirstOrThrow();
    await d.app.domains.remove(ws.id, row.id);
    t.equal(await keys(ws.id, 'acme.example', 'postern'), null, 'a removed domain no longer signs');
  });
}
