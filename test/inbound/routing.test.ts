// Inbound routing (inbound/routing.ts) and the policy at RCPT TO (smtp/listener.ts): which
// recipients are served and where each one goes. The router is asked directly for the routes (the
// exact address beats the catch-all, reserved names reach only the catch-all, +tags are split off,
// custom domains only once their MX is verified); the listener's answers are checked over SMTP.
// Postmaster and over-long local parts: test/smtp/protocol.test.ts.
import t from 'tap';
import { createRouter } from '../../src/inbound/routing.js';
import { createAddress, RawSmtp, setup } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`routing (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d, shared, ws } = env;
    const router = () => createRouter({ config: d.app.config, db: d.app.db, bus: d.app.bus, clock: d.clock });
    const inbox = await createAddress(env, { localPart: 'inbox' });
    await createAddress(env, { localPart: '*' });
    const sharedDomain = await d.app.db.selectFrom('domains').select('id').where('domain', '=', shared).executeTakeFirstOrThrow();

    t.test('addresses of a shared domain', async (t) => {
      const r = router();
      t.match(await r.resolve(`inbox@${shared}`), {
        kind: 'mailbox',
        rcpt: `inbox@${shared}`,
        workspaceId: ws.id,
        plan: 'free',
        exact: true,
        plusTag: '',
        address: { public_id: inbox.id, local_part: 'inbox', domain_id: sharedDomain.id },
      });
      t.match(
        await r.resolve(`InBox+Orders+2@${shared.toUpperCase()}.`),
        { kind: 'mailbox', exact: true, plusTag: 'orders+2', address: { local_part: 'inbox' } },
        'case, a trailing dot and a +tag',
      );
      t.match(await r.resolve(`inbox+@${shared}`), { exact: true, plusTag: '', address: { local_part: 'inbox' } }, 'an empty +tag');
      t.match(await r.resolve(`other@${shared}`), { exact: false, plusTag: '', address: { local_part: '*' } }, 'the catch-all');
      t.match(await r.resolve(`+x@${shared}`), { exact: false, plusTag: 'x', address: { local_part: '*' } });
      t.match(await r.resolve(`x+inbox@${shared}`), { exact: false, address: { local_part: '*' } }, 'the part before + decides');
      t.match(await r.resolve(`abuse@${shared}`), { exact: false, address: { local_part: '*' } }, 'a reserved name: the catch-all only');
      // Even when a row names it (created before the name was reserved), a reserved name reaches the catch-all.
      await d.app.db.updateTable('inbound_addresses').set({ local_part: 'abuse' }).where('public_id', '=', inbox.id).execute();
      t.match(await r.resolve(`abuse@${shared}`), { exact: false, address: { local_part: '*' } });
      await d.app.db.updateTable('inbound_addresses').set({ local_part: 'inbox' }).where('public_id', '=', inbox.id).execute();

      await d.app.db.updateTable('inbound_addresses').set({ active: 0 }).where('public_id', '=', inbox.id).execute();
      t.match(await r.resolve(`inbox@${shared}`), { exact: false, address: { local_part: '*' } }, 'an inactive address is skipped');
      await d.app.db
        .updateTable('inbound_addresses')
        .set({ active: 1, deleted_at: '2020-01-01T00:00:00.000Z' })
        .where('public_id', '=', inbox.id)
        .execute();
      t.match(await r.resolve(`inbox@${shared}`), { exact: false, address: { local_part: '*' } }, 'a deleted address is skipped');
      await d.app.db.updateTable('inbound_addresses').set({ deleted_at: null }).where('public_id', '=', inbox.id).execute();
      await d.app.db.updateTable('inbound_addresses').set({ active: 0 }).where('local_part', '=', '*').execute();
      t.match(await r.resolve(`other@${shared}`), { kind: 'mailbox', exact: false, address: null }, 'a served domain with no match');
      await d.app.db.updateTable('inbound_addresses').set({ active: 1 }).where('local_part', '=', '*').execute();
    });

    t.test('what is not served', async (t) => {
      const r = router();
      for (const rcpt of [
        'inbox',
        `@${shared}`,
        'inbox@example.com',
        `inbox@nobody.in.postern.test`,
        `inbox@x.${shared}`,
        `inbox@in.postern.test`,
      ]) {
        t.equal(await r.resolve(rcpt), null, rcpt);
      }
      t.same(
        await r.resolve(`anything@bounces.${d.app.config.hostname}`),
        { kind: 'bounce', rcpt: `anything@bounces.${d.app.config.hostname}` },
        'the bounce domain',
      );
      t.same(await r.resolve(`a+b@BOUNCES.${d.app.config.hostname}.`), { kind: 'bounce', rcpt: `a+b@BOUNCES.${d.app.config.hostname}.` });
    });

    t.test('a shared domain stored in an older form, and one deleted', async (t) => {
      const other = await d.workspace('beta', { plan: 'pro' });
      await d.app.db
        .insertInto('domains')
        .values({
          id: 'legacy-domain',
          workspace_id: other.id,
          domain: 'beta.in.old-postern.test',
          kind: 'shared',
          status: 'verified',
          dkim_selector: null,
          dkim_private_key: null,
          dkim_public_key: null,
          verified_at: null,
          dkim_verified_at: null,
          mx_verified_at: null,
          created_at: '2020-01-01T00:00:00.000Z',
          deleted_at: null,
        })
        .execute();
      t.match(await router().resolve('x@beta.in.old-postern.test'), { kind: 'mailbox', workspaceId: other.id, plan: 'pro', address: null });
      // Mail for the current form finds the workspace's shared domain as stored, with its addresses.
      await d.app.db
        .insertInto('inbound_addresses')
        .values({
          id: 'legacy-catch-all',
          public_id: 'inb_legacycatchall',
          workspace_id: other.id,
          domain_id: 'legacy-domain',
          local_part: '*',
          address: '*@beta.in.old-postern.test',
          description: '',
          forward_to: null,
          webhook_endpoint_id: null,
          active: 1,
          livemode: 1,
          created_at: '2020-01-01T00:00:00.000Z',
          deleted_at: null,
        })
        .execute();
      await d.app.db
        .updateTable('domains')
        .set({ deleted_at: '2021-01-01T00:00:00.000Z' })
        .where('domain', '=', 'beta.in.postern.test')
        .execute();
      t.match(
        await router().resolve('x@beta.in.postern.test'),
        { kind: 'mailbox', workspaceId: other.id, address: { public_id: 'inb_legacycatchall', domain_id: 'legacy-domain' } },
        'the current form reaches the stored shared domain',
      );
      await d.app.db.updateTable('domains').set({ deleted_at: '2021-01-01T00:00:00.000Z' }).where('id', '=', 'legacy-domain').execute();
      t.equal(await router().resolve('x@beta.in.old-postern.test'), null, 'deleted: not served');

      // The current form, its row gone: still the workspace's, with no address to match.
      await d.app.db.updateTable('domains').set({ deleted_at: '2021-01-01T00:00:00.000Z' }).where('id', '=', sharedDomain.id).execute();
      t.match(await router().resolve(`inbox@${shared}`), { kind: 'mailbox', workspaceId: ws.id, address: null, exact: false });
      await d.app.db.updateTable('domains').set({ deleted_at: null }).where('id', '=', sharedDomain.id).execute();
    });

    t.test('a custom domain is served once its MX is verified, never before, never after failing', async (t) => {
      await d.app.db
        .insertInto('domains')
        .values({
          id: 'custom-domain',
          workspace_id: ws.id,
          domain: 'mail.acme.example',
          kind: 'custom',
          status: 'pending',
          dkim_selector: null,
          dkim_private_key: null,
          dkim_public_key: null,
          verified_at: null,
          dkim_verified_at: null,
          mx_verified_at: null,
          created_at: '2020-01-01T00:00:00.000Z',
          deleted_at: null,
        })
        .execute();
      const set = (v: Record<string, string | null>) => d.app.db.updateTable('domains').set(v).where('id', '=', 'custom-domain').execute();
      t.equal(await router().resolve('x@mail.acme.example'), null, 'pending, MX not verified');
      await set({ mx_verified_at: '2020-01-02T00:00:00.000Z' });
      t.match(
        await router().resolve('x@mail.acme.example'),
        { kind: 'mailbox', workspaceId: ws.id, address: null },
        'MX verified, DKIM not yet',
      );
      await set({ status: 'verified' });
      t.match(await router().resolve('x@MAIL.acme.example'), { kind: 'mailbox', workspaceId: ws.id });
      await set({ status: 'failed' });
      t.equal(await router().resolve('x@mail.acme.example'), null, 'failed');
      await set({ status: 'verified', deleted_at: '2021-01-01T00:00:00.000Z' });
      t.equal(await router().resolve('x@mail.acme.example'), null, 'deleted');
      await set({ deleted_at: null, mx_verified_at: null });
      t.equal(await router().resolve('x@mail.acme.example'), null, 'verified for sending only');
      await set({ kind: 'shared', mx_verified_at: null });
      t.match(await router().resolve('x@mail.acme.example'), { kind: 'mailbox' }, 'a shared row needs no MX check');
      await set({ kind: 'custom' });

      // Answers are cached briefly; a routing change drops the cache at once.
      const r = router();
      t.equal(await r.resolve('x@mail.acme.example'), null);
      await set({ mx_verified_at: '2020-01-02T00:00:00.000Z' });
      d.app.bus.publish('domains.changed', null);
      t.match(await r.resolve('x@mail.acme.example'), { kind: 'mailbox' }, 'seen at once after domains.changed');
      await set({ mx_verified_at: null });
    });

    t.test('the answers at RCPT TO', async (t) => {
      const c = await RawSmtp.connect(d.smtpPort);
      t.teardown(() => c.close());
      t.match(await c.cmd('EHLO client.example.org'), /^250/);
      t.match(await c.cmd('MAIL FROM:<alice@sender.example>'), /^250/);
      t.equal(await c.cmd('RCPT TO:<someone@example.com>'), '550 5.7.1 <someone@example.com>: relay access denied');
      t.equal(await c.cmd('RCPT TO:<x@mail.acme.example>'), '550 5.7.1 <x@mail.acme.example>: relay access denied');
      t.match(await c.cmd(`RCPT TO:<inbox@${shared}>`), /^250 /);
      t.match(await c.cmd(`RCPT TO:<INBOX@${shared}>`), /^250 /, 'a repeat in another case is accepted');
      t.match(await c.cmd(`RCPT TO:<other@${shared}>`), /^250 /);
      t.match(await c.cmd(`RCPT TO:<${'a'.repeat(64)}@${shared}>`), /^250 /, '64 octets');
      t.match(await c.cmd(`RCPT TO:<${'é'.repeat(33)}@${shared}>`), /^501 5\.1\.3 /, '66 octets in 33 characters');
      t.match(await c.cmd('DATA'), /^354/);
      const reply = await c.cmd(
        [`From: a@sender.example`, `To: inbox@${shared}`, 'Subject: routed', 'Message-ID: <r1@sender.example>', '', 'hi', '.'].join('\r\n'),
      );
      t.match(reply, /^250 /);
      const list = await d.request('GET', '/v1/inbound/messages', { key: ws.live });
      const routed = list.body.messages.filter((m: any) => m.subject === 'routed');
      t.equal(routed.length, 2, 'one message per address: inbox, and the catch-all');
      const details = await Promise.all(routed.map((m: any) => d.request('GET', `/v1/inbound/messages/${m.id}`, { key: ws.live })));
      t.same(
        details.map((r) => r.body.envelope.to as string[]).sort((a, b) => a.length - b.length),
        [[`inbox@${shared}`], [`other@${shared}`, `${'a'.repeat(64)}@${shared}`]],
        'a recipient repeated in another case is routed once',
      );
    });
  });
}
