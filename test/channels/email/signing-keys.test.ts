// The signing keys read for every email (channels/email/signing-keys.ts): kept for two seconds,
// forgotten at once when this node changes a domain, so a domain verified or removed here signs
// (or stops signing) from the next message on.
import t from 'tap';
import { createSigningKeys } from '../../../src/channels/email/signing-keys.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { addVerifiedDomain } from '../../helpers/smtp-sink.js';

for (const db of testDatabases()) {
  t.test(`signing keys on ${db}`, async (t) => {
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('acme');
    const keys = createSigningKeys({ db: d.app.db, bus: d.app.bus, box: d.app.box });

    t.equal(await keys(ws.id, 'acme.example', 'postern'), null, 'no sending domain yet');
    // Written behind the cache's back (as another process would): not seen within the TTL.
    await addVerifiedDomain(d.app, ws.id, 'acme.example');
    t.equal(await keys(ws.id, 'acme.example', 'postern'), null, 'the answer is kept');
    // A change on this node is announced, and the next message sees it.
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
