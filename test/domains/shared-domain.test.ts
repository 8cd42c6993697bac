// The shared receiving domain has the interface's form {slug}.in.{sharedInboundDomain}; a shared
// domain stored under another form (an install of 0.1.0, whose form was {slug}.{sharedInboundDomain})
// keeps receiving, and the daemon says so at start.
import t from 'tap';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`the shared domain is {slug}.in.{sharedInboundDomain} (${db})`, async (t) => {
    const env = await setup(t, { db, env: { POSTERN_SHARED_INBOUND_DOMAIN: 'mail.example.org' } });
    const a = await createAddress(env, { localPart: 'support' });
    t.equal(a.address, 'support@acme.in.mail.example.org');
    const domains = (await env.d.request('GET', '/v1/inbound/domains', { key: env.ws.live })).body.domains;
    t.match(domains, [{ domain: 'acme.in.mail.example.org', kind: 'shared', status: 'verified', records: [] }]);
    const reply = await sendRaw(
      env.d.smtpPort,
      { from: 'x@sender.example', to: [a.address] },
      simpleMail({ to: a.address, subject: 'In' }),
    );
    t.match(reply, /^250 /, 'mail to it is received');
    const claim = await env.d.request('POST', '/v1/inbound/domains', { key: env.ws.live, body: { domain: 'other.in.mail.example.org' } });
    t.match(claim, { status: 422, body: { error: { code: 'invalid_domain' } } }, 'a name under in.{sharedInboundDomain} cannot be claimed');
    t.equal(
      (
        await env.d.request('POST', '/v1/inbound/domains', {
          key: env.ws.live,
          body: { domain: 'mail.example.org', acknowledgeExistingMx: true },
        })
      ).status,
      201,
      'the parent domain itself is not a shared domain and can be claimed',
    );
  });

  t.test(`a shared domain stored in the form of 0.1.0 keeps receiving, with a note at start (${db})`, async (t) => {
    const first = await setup(t, { db });
    const old = await createAddress(first, { localPart: 'help' });
    // As 0.1.0 created it: {slug}.{sharedInboundDomain} with sharedInboundDomain "in.postern.test"
    // was the same name; an install that used "legacy.test" had acme.legacy.test.
    await first.d.app.db.updateTable('domains').set({ domain: 'acme.legacy.test' }).where('kind', '=', 'shared').execute();
    await first.d.app.db
      .updateTable('inbound_addresses')
      .set({ address: 'help@acme.legacy.test' })
      .where('public_id', '=', old.id)
      .execute();
    await first.d.stop();

    const env = await setup(t, {
      dataDir: first.d.dataDir,
      env: { POSTERN_DATABASE_URL: first.d.env.POSTERN_DATABASE_URL },
      slug: 'other',
    });
    t.ok(
      env.d.logs.some((l) => l.includes('shared domains created under another form keep receiving') && l.includes('acme.legacy.test')),
      'the start-up note names the domain',
    );
    const reply = await sendRaw(
      env.d.smtpPort,
      { from: 'x@sender.example', to: ['help@acme.legacy.test'] },
      simpleMail({ to: 'help@acme.legacy.test', subject: 'Old form' }),
    );
    t.match(reply, /^250 /, 'mail to the stored form is still received');
    const listed = (await env.d.request('GET', '/v1/inbound/messages', { key: first.ws.live })).body.messages;
    t.match(listed, [{ subject: 'Old form', status: 'received' }], 'and routed to its address');
    t.match(
      await sendRaw(
        env.d.smtpPort,
        { from: 'x@sender.example', to: ['help@acme.in.postern.test'] },
        simpleMail({ to: 'help@acme.in.postern.test', subject: 'New form' }),
      ),
      /^250 /,
      'the new form of the same workspace is served too',
    );
  });
}
