// Receiving over real SMTP: verdicts, Authentication-Results, routing precedence, quota, the
// message.received outbox row, truncation, environments and isolation between workspaces.
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, sendRaw, setup, simpleMail, transport } from '../helpers/inbound.js';

for (const db of testDatabases()) {
  t.test(`verdicts for signed and unsigned mail (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const p = (publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64');
    env.dns.set('sender.example', [
      { type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' },
      { type: 'MX', data: { preference: 10, exchange: 'mx.sender.example' } },
    ]);
    env.dns.set('s1._domainkey.sender.example', [{ type: 'TXT', data: `v=DKIM1; k=rsa; p=${p}` }]);
    env.dns.set('_dmarc.sender.example', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
    env.dns.set('forged.example', [{ type: 'TXT', data: 'v=spf1 ip4:192.0.2.1 -all' }]);
    env.dns.set('_dmarc.forged.example', [{ type: 'TXT', data: 'v=DMARC1; p=reject' }]);
    const a = await createAddress(env, { localPart: 'inbox' });

    const info = await transport(env.d.smtpPort).sendMail({
      from: 'Alice <alice@sender.example>',
      to: a.address,
      subject: 'Signed',
      text: 'Signed body',
      dkim: { domainName: 'sender.example', keySelector: 's1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string },
    });
    t.match(info.response, /^250 /);
    await sendRaw(
      env.d.smtpPort,
      { from: 'ceo@forged.example', to: [a.address] },
      simpleMail({ from: 'CEO <ceo@forged.example>', to: a.address, subject: 'Forged' }),
    );

    const list = await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live });
    t.equal(list.body.messages.length, 2);
    const both = await Promise.all(
      list.body.messages.map((m: any) => env.d.request('GET', `/v1/inbound/messages/${m.id}`, { key: env.ws.live })),
    );
    const signed = both.find((r) => r.body.subject === 'Signed')!;
    const forged = both.find((r) => r.body.subject === 'Forged')!;
    t.equal(signed.body.subject, 'Signed');
    t.equal(signed.body.verdicts.spf.result, 'pass');
    t.equal(signed.body.verdicts.dkim.result, 'pass');
    t.same(signed.body.verdicts.dkim.signatures, [{ domain: 'sender.example', selector: 's1', result: 'pass' }]);
    t.equal(signed.body.verdicts.dmarc.result, 'pass');
    t.equal(signed.body.verdicts.arc.result, 'none');
    t.equal(forged.body.subject, 'Forged');
    t.equal(forged.body.verdicts.spf.result, 'fail');
    t.equal(forged.body.verdicts.dkim.result, 'none');
    t.equal(forged.body.verdicts.dmarc.result, 'fail');

    const raw = await fetch(signed.body.rawUrl, { headers: { authorization: `Bearer ${env.ws.live}` } });
    t.equal(raw.headers.get('content-type'), 'message/rfc822');
    const text = await raw.text();
    t.match(text, /^Received-SPF: pass/);
    t.match(text, /\r\nAuthentication-Results: mx\.postern\.test;\r\n dkim=pass/);
    t.equal(Buffer.byteLength(text), signed.body.sizeBytes);
  });

  t.test(`routing: exact beats catch-all, plus tags, reserved names, dropped (${db})`, async (t) => {
    const env = await setup(t, { db });
    const beta = await env.d.workspace('beta');
    const support = await createAddress(env, { localPart: 'support' });
    await createAddress(env, { localPart: '*' });
    const betaSales = await createAddress(env, { localPart: 'sales' }, beta.live);
    const betaDomain = 'beta.in.postern.test';

    // One transaction naming several recipients in two workspaces.
    const reply = await sendRaw(
      env.d.smtpPort,
      {
        from: 'bob@example.org',
        to: [
          `Support+Orders@${env.shared.toUpperCase()}`,
          `support@${env.shared}`,
          `random@${env.shared}`,
          `postmaster@${env.shared}`,
          betaSales.address,
          `nobody@${betaDomain}`,
          `abuse@${betaDomain}`,
        ],
      },
      simpleMail({ from: 'bob@example.org', to: support.address, subject: 'Multi' }),
    );
    t.match(reply, /^250 /);

    const acme = (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages;
    t.equal(acme.length, 2, 'one message per matching address: support (deduplicated) and the catch-all');
    const details = await Promise.all(
      acme.map((m: any) => env.d.request('GET', `/v1/inbound/messages/${m.id}`, { key: env.ws.live }).then((r) => r.body)),
    );
    const exact = details.find((m: any) => m.address === support.address);
    t.ok(exact, 'exact match carries the canonical address');
    t.equal(exact.plusTag, 'orders');
    t.same(
      exact.envelope.to.map((s: string) => s.toLowerCase()),
      [`support+orders@${env.shared}`, `support@${env.shared}`],
    );
    const catchAll = details.find((m: any) => m.address === null);
    t.equal(catchAll.status, 'received');
    t.same(catchAll.envelope.to, [`random@${env.shared}`, `postmaster@${env.shared}`], 'reserved names reach the catch-all');
    t.notOk(catchAll.envelope.to.includes(betaSales.address), 'envelope shows only this workspace recipients');

    const betaList = (await env.d.request('GET', '/v1/inbound/messages', { key: beta.live })).body.messages;
    t.equal(betaList.length, 2);
    const statuses = betaList.map((m: any) => m.status).sort();
    t.same(statuses, ['dropped', 'received']);
    const dropped = await env.d.request('GET', `/v1/inbound/messages/${betaList.find((m: any) => m.status === 'dropped').id}`, {
      key: beta.live,
    });
    t.equal(dropped.body.address, null);

    // Isolation: acme cannot read beta's message, nor filter by its address.
    t.equal((await env.d.request('GET', `/v1/inbound/messages/${betaList[0].id}`, { key: env.ws.live })).status, 404);
    t.same((await env.d.request('GET', `/v1/inbound/messages?address=${betaSales.id}`, { key: env.ws.live })).body.messages, []);
    const bySales = await env.d.request('GET', `/v1/inbound/messages?address=${betaSales.id}`, { key: beta.live });
    t.equal(bySales.body.messages.length, 1);

    // Only message.received rows for received messages, bound endpoint carried.
    const events = await env.d.app.db.selectFrom('events').selectAll().where('type', '=', 'message.received').execute();
    t.equal(events.length, 3);
  });

  t.test(`message.received outbox row, quota, truncation, environments (${db})`, async (t) => {
    const env = await setup(t, {
      db,
      env: {
        POSTERN_PLANS_FREE_INBOUND_PER_MONTH: '2',
        POSTERN_PLANS_STARTER_INBOUND_PER_MONTH: '10',
        POSTERN_PLANS_PRO_INBOUND_PER_MONTH: '100',
        POSTERN_PLANS_CUSTOM_INBOUND_PER_MONTH: '0',
        POSTERN_INBOUND_MAX_BODY_BYTES: '2048',
      },
    });
    const seen: unknown[] = [];
    env.d.app.bus.subscribe('events.recorded', (p) => seen.push(p));
    const hook = await env.d.request('POST', '/v1/webhooks', {
      key: env.ws.live,
      body: { url: 'https://hooks.example.com/in', events: ['message.received'] },
    });
    t.equal(hook.status, 201, JSON.stringify(hook.body));
    const bad = await env.d.request('POST', '/v1/inbound/addresses', {
      key: env.ws.live,
      body: { localPart: 'nohook', webhookEndpointId: 'whk_0123456789abcdefghijkl' },
    });
    t.match(
      bad,
      { status: 422, body: { error: { code: 'invalid_body', issues: [{ path: 'webhookEndpointId' }] } } },
      'an unknown endpoint is refused',
    );
    const otherEnv = await env.d.request('POST', '/v1/inbound/addresses', {
      key: env.ws.live,
      body: { localPart: 'testhook', livemode: false, webhookEndpointId: hook.body.id },
    });
    t.match(
      otherEnv,
      { status: 422, body: { error: { issues: [{ path: 'webhookEndpointId' }] } } },
      'an endpoint of the other environment is refused',
    );
    const a = await createAddress(env, { localPart: 'hooks', webhookEndpointId: hook.body.id, forwardTo: 'me@elsewhere.example' });
    const long = 'é'.repeat(3000);
    await sendRaw(env.d.smtpPort, { from: 'x@example.org', to: [a.address] }, simpleMail({ to: a.address, subject: 'Long', body: long }));
    const events = await env.d.app.db.selectFrom('events').selectAll().execute();
    t.equal(events.length, 1);
    t.equal(events[0].type, 'message.received');
    t.equal(events[0].endpoint_id, hook.body.id);
    t.equal(seen.length, 1, 'events.recorded published after commit');
    const data = JSON.parse(events[0].data);
    const detail = await env.d.request('GET', `/v1/inbound/messages/${data.id}`, { key: env.ws.live });
    t.same(data, { id: detail.body.id }, 'the event names the message; the body is stored once');
    t.same(
      JSON.parse(await env.d.app.inbound.messages.eventPayload(events[0].data)),
      detail.body,
      'the webhook payload data is the detail exactly',
    );
    t.equal(detail.body.truncated, true);
    t.ok(Buffer.byteLength(detail.body.text) <= 2048);
    t.ok(detail.body.text.startsWith('éé'));
    // Quoting nothing, the reply is the whole text, trimmed: derived when read, not stored twice.
    t.equal(detail.body.strippedReply, detail.body.text.replace(/\r\n?/g, '\n').trim());
    const stored = await env.d.app.db
      .selectFrom('received_messages')
      .select('parsed')
      .where('public_id', '=', data.id)
      .executeTakeFirstOrThrow();
    t.notOk('strippedReply' in JSON.parse(stored.parsed), 'the parsed column holds the body once');

    env.d.clock.advance(1000);
    await sendRaw(env.d.smtpPort, { from: 'x@example.org', to: [a.address] }, simpleMail({ to: a.address, subject: 'Second' }));
    env.d.clock.advance(1000);
    await sendRaw(env.d.smtpPort, { from: 'x@example.org', to: [a.address] }, simpleMail({ to: a.address, subject: 'Third' }));
    const list = (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages;
    t.same(
      list.map((m: any) => [m.subject, m.status]),
      [
        ['Third', 'quota_exceeded'],
        ['Second', 'received'],
        ['Long', 'received'],
      ],
    );
    // Only message.received counts here: the address forwards, so outbound events follow too.
    t.equal(
      (await env.d.app.db.selectFrom('events').selectAll().where('type', '=', 'message.received').execute()).length,
      2,
      'no event for quota_exceeded',
    );

    // A test-mode address: its mail is listed for test keys only.
    const testAddr = await createAddress(env, { localPart: 'sandbox', livemode: false });
    await sendRaw(
      env.d.smtpPort,
      { from: 'x@example.org', to: [testAddr.address] },
      simpleMail({ to: testAddr.address, subject: 'Sandbox' }),
    );
    const testList = (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.test })).body.messages;
    t.same(
      testList.map((m: any) => m.subject),
      ['Sandbox'],
    );
    t.notOk(
      (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages.some((m: any) => m.subject === 'Sandbox'),
    );
  });

  t.test(`the quota holds for messages committed together (${db})`, async (t) => {
    const env = await setup(t, {
      db,
      env: {
        POSTERN_PLANS_FREE_INBOUND_PER_MONTH: '3',
        POSTERN_PLANS_STARTER_INBOUND_PER_MONTH: '10',
        POSTERN_PLANS_PRO_INBOUND_PER_MONTH: '100',
        POSTERN_PLANS_CUSTOM_INBOUND_PER_MONTH: '0',
      },
    });
    const a = await createAddress(env, { localPart: 'burst' });
    // Eight sessions at once: on SQLite they share commits (one batch, a few statements).
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        sendRaw(env.d.smtpPort, { from: 'x@example.org', to: [a.address] }, simpleMail({ to: a.address, subject: `Burst ${i}` })),
      ),
    );
    t.ok(
      replies.every((r) => /^250 /.test(r)),
      'every message got its 250',
    );
    const list = (await env.d.request('GET', '/v1/inbound/messages', { key: env.ws.live })).body.messages;
    t.equal(list.length, 8, 'every message is stored');
    t.equal(list.filter((m: any) => m.status === 'received').length, 3, 'exactly the quota is received');
    t.equal(list.filter((m: any) => m.status === 'quota_exceeded').length, 5);
    const usage = await env.d.app.db
      .selectFrom('inbound_usage')
      .select('received')
      .where('workspace_id', '=', env.ws.id)
      .executeTakeFirstOrThrow();
    t.equal(Number(usage.received), 3, 'the usage counter counts what was received');
    const events = await env.d.app.db.selectFrom('events').selectAll().where('type', '=', 'message.received').execute();
    t.equal(events.length, 3, 'one event per received message');
    t.ok(
      events.every((e) => Number(e.fanned_out) === 1 && Number(e.forward_checked) === 1),
      'no endpoint and no forward: recorded with nothing left to do',
    );
  });
}
