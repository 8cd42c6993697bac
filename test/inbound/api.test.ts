// Every rule and error of the inbound domains, addresses and messages endpoints.
import t from 'tap';
import { testDatabases } from '../helpers/databases.js';
import { findSigningKey } from '../../src/domains/sending.js';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';

const DAY = 24 * 3600 * 1000;

for (const db of testDatabases()) {
  t.test(`domains API (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d } = env;
    const key = env.ws.live;
    const req = (m: string, p: string, body?: unknown) => {
      d.clock.advance(1);
      return d.request(m, `/v1/inbound${p}`, { key, body });
    };

    t.same((await req('GET', '/domains')).body, { domains: [] }, 'the shared domain is created lazily');
    for (const bad of [
      'a.b',
      'x'.repeat(250) + '.com',
      'not a domain',
      'localhost',
      'foo..com',
      '-a.com',
      'a.123',
      `x.${'in.postern.test'}`,
      'mx.postern.test',
    ]) {
      const r = await req('POST', '/domains', { domain: bad });
      t.equal(r.status, 422, bad);
      t.equal(r.body.error.code, 'invalid_domain', bad);
    }
    t.equal((await req('POST', '/domains', {})).body.error.code, 'invalid_body');

    env.dns.set('taken.example', [{ type: 'MX', data: { preference: 10, exchange: 'aspmx.l.google.com' } }]);
    const mx = await req('POST', '/domains', { domain: 'taken.example' });
    t.equal(mx.status, 409);
    t.equal(mx.body.error.code, 'existing_mx');
    t.same(mx.body.error.hosts, ['aspmx.l.google.com']);
    const acked = await req('POST', '/domains', { domain: 'Taken.Example.', acknowledgeExistingMx: true });
    t.equal(acked.status, 201);
    t.equal(acked.body.domain, 'taken.example');

    const claim = await req('POST', '/domains', { domain: 'mail.corp.example' });
    t.equal(claim.status, 201);
    t.equal(claim.body.kind, 'custom');
    t.equal(claim.body.status, 'pending');
    t.equal(claim.body.verifiedAt, null);
    const [mxRec, dkimRec] = claim.body.records;
    t.same(
      { ...mxRec, purpose: undefined },
      {
        type: 'MX',
        name: 'mail.corp.example',
        value: 'mx.postern.test',
        priority: 10,
        check: 'inboundMx',
        verified: false,
        stillPublished: null,
        purpose: undefined,
      },
    );
    t.ok(mxRec.purpose.length > 10);
    t.equal(dkimRec.type, 'TXT');
    t.equal(dkimRec.name, 'postern._domainkey.mail.corp.example');
    t.match(dkimRec.value, /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
    t.equal(dkimRec.check, 'dkim');

    t.equal((await req('POST', '/domains', { domain: 'mail.corp.example' })).body.error.code, 'already_exists');
    const other = await d.workspace('other');
    const stolen = await d.request('POST', '/v1/inbound/domains', { key: other.live, body: { domain: 'mail.corp.example' } });
    t.equal(stolen.status, 409);
    t.equal(stolen.body.error.code, 'domain_claimed');
    t.equal((await d.request('GET', `/v1/inbound/domains/${claim.body.id}`, { key: other.live })).status, 404, 'isolation');

    // Address on a pending domain: refused. Publish MX only: still pending. Then DKIM: verified.
    t.equal((await req('POST', '/addresses', { localPart: 'x', domainId: claim.body.id })).status, 422);
    t.equal(await findSigningKey(d.app.db, d.app.box, env.ws.id, 'mail.corp.example', 'postern'), null);
    env.dns.set('mail.corp.example', [{ type: 'MX', data: { preference: 10, exchange: 'mx.postern.test' } }]);
    t.equal((await req('GET', `/domains/${claim.body.id}`)).body.status, 'pending');
    env.dns.set('postern._domainkey.mail.corp.example', [{ type: 'TXT', data: dkimRec.value }]);
    d.clock.advance(60_000);
    const verified = await req('GET', `/domains/${claim.body.id}`);
    t.equal(verified.body.status, 'verified');
    t.equal(verified.body.verifiedAt, d.clock.now().toISOString());
    const signing = await findSigningKey(d.app.db, d.app.box, env.ws.id, 'MAIL.corp.example', 'unused-default');
    t.equal(signing?.selector, 'postern');
    t.match(signing?.privateKey, /BEGIN PRIVATE KEY/);

    // A verified custom domain receives; an address on it routes.
    const addr = await req('POST', '/addresses', { localPart: 'Sales', domainId: claim.body.id });
    t.equal(addr.status, 201);
    t.equal(addr.body.address, 'sales@mail.corp.example');
    t.match(
      await sendRaw(d.smtpPort, { from: 'a@example.org', to: ['sales@mail.corp.example'] }, simpleMail({ to: 'sales@mail.corp.example' })),
      /^250 /,
    );
    t.same(
      (await req('GET', `/addresses?domainId=${claim.body.id}`)).body.addresses.map((a: any) => a.address),
      ['sales@mail.corp.example'],
    );

    // Shared domain first; then custom domains oldest first.
    await req('POST', '/addresses', {});
    const list = (await req('GET', '/domains')).body.domains;
    t.same(
      list.map((x: any) => [x.domain, x.kind]),
      [
        ['acme.in.postern.test', 'shared'],
        ['taken.example', 'custom'],
        ['mail.corp.example', 'custom'],
      ],
    );
    t.same(list[0].records, []);
    t.equal(list[0].status, 'verified');
    const del = await req('DELETE', `/domains/${list[0].id}`);
    t.equal(del.status, 409);
    t.equal(del.body.error.code, 'shared_domain');

    // Pending for more than 7 days → failed.
    d.clock.advance(8 * DAY);
    t.equal((await req('GET', `/domains/${acked.body.id}`)).body.status, 'failed');
    t.equal(
      (await d.request('POST', '/v1/inbound/domains', { key: other.live, body: { domain: 'taken.example', acknowledgeExistingMx: true } }))
        .status,
      201,
      'a failed claim no longer blocks',
    );

    // Soft delete: the domain and its addresses go; mail to it is refused at RCPT.
    t.same((await req('DELETE', `/domains/${claim.body.id}`)).body, { deleted: true });
    t.equal((await req('GET', `/domains/${claim.body.id}`)).status, 404);
    t.equal((await req('DELETE', `/domains/${claim.body.id}`)).status, 404);
    await t.rejects(
      sendRaw(d.smtpPort, { from: 'a@example.org', to: ['sales@mail.corp.example'] }, simpleMail({ to: 'sales@mail.corp.example' })),
      { responseCode: 550 } as never,
    );
    t.equal(await findSigningKey(d.app.db, d.app.box, env.ws.id, 'mail.corp.example', 'postern'), null);
    t.equal((await req('GET', '/domains/not-a-uuid')).status, 404);
  });

  t.test(`addresses API (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d } = env;
    const post = (body: unknown, key = env.ws.live) => {
      d.clock.advance(1);
      return d.request('POST', '/v1/inbound/addresses', { key, body });
    };

    const gen = await post({});
    t.equal(gen.status, 201);
    t.match(gen.body, {
      address: /^rcv-[a-z0-9]{10}@acme\.in\.postern\.test$/,
      description: '',
      forwardTo: null,
      active: true,
      livemode: true,
    });
    t.match(gen.body.id, /^inb_[0-9A-Za-z]{22}$/);
    t.ok(gen.body.createdAt);
    const gen2 = await post({});
    t.not(gen2.body.address, gen.body.address);

    const ok = await post({ localPart: 'Billing.Team-1', description: 'd'.repeat(200), forwardTo: 'ops@corp.example', livemode: false });
    t.equal(ok.status, 201);
    t.equal(ok.body.address, 'billing.team-1@acme.in.postern.test');
    t.equal(ok.body.forwardTo, 'ops@corp.example');
    t.equal(ok.body.livemode, false, 'livemode from the body, not the key');
    const dup = await post({ localPart: 'billing.team-1' });
    t.equal(dup.status, 409);
    t.equal(dup.body.error.code, 'already_exists');
    const star = await post({ localPart: '*' });
    t.equal(star.status, 201);
    t.equal(star.body.address, '*@acme.in.postern.test', 'the catch-all address');

    const bad = async (body: Record<string, unknown>, path: string) => {
      const r = await post(body);
      t.equal(r.status, 422, JSON.stringify(body).slice(0, 80));
      t.equal(r.body.error.code, 'invalid_body');
      t.ok(
        r.body.error.issues.some((i: any) => i.path === path),
        path,
      );
    };
    await bad({ localPart: '' }, 'localPart');
    await bad({ localPart: 'a'.repeat(65) }, 'localPart');
    await bad({ localPart: '.dot' }, 'localPart');
    await bad({ localPart: 'dash-' }, 'localPart');
    await bad({ localPart: 'plus+tag' }, 'localPart');
    await bad({ localPart: 'postmaster' }, 'localPart');
    await bad({ localPart: 'Abuse' }, 'localPart');
    await bad({ description: 'd'.repeat(201) }, 'description');
    await bad({ forwardTo: 'not-an-address' }, 'forwardTo');
    await bad({ forwardTo: `${'a'.repeat(310)}@example.com` }, 'forwardTo');
    await bad({ forwardTo: 'loop@acme.in.postern.test' }, 'forwardTo');
    await bad({ forwardTo: 'loop@someone-else.in.postern.test' }, 'forwardTo');
    await bad({ domainId: '00000000-0000-7000-8000-000000000000' }, 'domainId');
    await bad({ livemode: 'yes' }, 'livemode');
    await bad({ unknownField: 1 }, '');

    // Listing: the shared domain's addresses, oldest first; other workspaces see none of them.
    const list = await d.request('GET', '/v1/inbound/addresses', { key: env.ws.live });
    t.same(
      list.body.addresses.map((a: any) => a.id),
      [gen.body.id, gen2.body.id, ok.body.id, star.body.id],
    );
    const other = await d.workspace('other');
    t.same((await d.request('GET', '/v1/inbound/addresses', { key: other.live })).body, { addresses: [] });
    // Another workspace may use the same local part on its own shared domain.
    t.equal((await post({ localPart: 'billing.team-1' }, other.live)).status, 201);

    const scoped = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read');
    const denied = await d.request('GET', '/v1/inbound/addresses', { key: scoped.json.secret });
    t.equal(denied.status, 403);
    t.equal(denied.body.error.code, 'insufficient_scope');
    t.equal((await d.request('GET', '/v1/inbound/messages')).status, 401);
  });

  t.test(`messages API: paging, filters, attachments, raw, retention (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d } = env;
    const key = env.ws.live;
    const a = await createAddress(env, { localPart: 'a' });
    const b = await createAddress(env, { localPart: 'b' });
    const start = d.clock.now().getTime();
    for (let i = 0; i < 5; i++) {
      d.clock.set(start + i * 1000);
      const to = i % 2 ? b.address : a.address;
      await sendRaw(d.smtpPort, { from: 'x@example.org', to: [to] }, simpleMail({ to, subject: `m${i}` }));
    }
    const get = (q: string) => d.request('GET', `/v1/inbound/messages${q}`, { key });
    const all = (await get('')).body.messages;
    t.same(
      all.map((m: any) => m.subject),
      ['m4', 'm3', 'm2', 'm1', 'm0'],
    );
    t.same(Object.keys(all[0]).sort(), ['from', 'id', 'plusTag', 'receivedAt', 'sizeBytes', 'status', 'subject']);
    t.equal(all[0].from, 'alice@sender.example');
    const page1 = (await get('?limit=2')).body.messages;
    t.same(
      page1.map((m: any) => m.subject),
      ['m4', 'm3'],
    );
    const page2 = (await get(`?limit=2&before=${encodeURIComponent(page1[1].receivedAt)}`)).body.messages;
    t.same(
      page2.map((m: any) => m.subject),
      ['m2', 'm1'],
    );
    t.same(
      (await get(`?address=${b.id}`)).body.messages.map((m: any) => m.subject),
      ['m3', 'm1'],
    );
    for (const q of ['?limit=0', '?limit=101', '?limit=abc', '?before=yesterday', '?before=2026-13-45T00:00:00Z', '?before=1700000000']) {
      const r = await get(q);
      t.equal(r.status, 400, q);
      t.equal(r.body.error.code, 'invalid_request', q);
    }
    t.equal((await get('/rcv_doesnotexist0000000000')).status, 404);

    // Attachments: extracted from the raw source, original type, safe filename.
    const boundary = 'b1';
    const mime = [
      'From: x@example.org',
      `To: ${a.address}`,
      'Subject: files',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain',
      '',
      'see attached',
      `--${boundary}`,
      'Content-Type: application/pdf; name="re\\"port.pdf"',
      'Content-Disposition: attachment; filename="../../etc/re\\"port.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('%PDF-1.4 fake').toString('base64'),
      `--${boundary}`,
      'Content-Type: image/png',
      'Content-Disposition: attachment; filename="=?UTF-8?B?w6nDqS5wbmc=?="',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64'),
      `--${boundary}--`,
      '',
    ].join('\r\n');
    d.clock.set(start + 10_000);
    await sendRaw(d.smtpPort, { from: 'x@example.org', to: [a.address] }, mime);
    const latest = (await get('?limit=1')).body.messages[0];
    const detail = (await get(`/${latest.id}`)).body;
    t.equal(detail.attachments.length, 2);
    t.match(detail.attachments[0], { index: 0, contentType: 'application/pdf', size: 13 });
    t.notMatch(detail.attachments[0].filename, /\//);
    t.equal(detail.attachments[1].filename, 'éé.png');
    t.equal(detail.attachments[0].url, `${d.app.publicUrl()}/v1/inbound/messages/${latest.id}/attachments/0`);
    const att = await fetch(detail.attachments[0].url, { headers: { authorization: `Bearer ${key}` } });
    t.equal(att.status, 200);
    t.equal(att.headers.get('content-type'), 'application/pdf');
    t.match(att.headers.get('content-disposition'), /^attachment; filename="[^"/\\]+"; filename\*=UTF-8''/);
    t.equal(await att.text(), '%PDF-1.4 fake');
    const png = await fetch(detail.attachments[1].url, { headers: { authorization: `Bearer ${key}` } });
    t.same(Buffer.from(await png.arrayBuffer()), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    t.match(png.headers.get('content-disposition'), /filename\*=UTF-8''%C3%A9%C3%A9\.png/);
    t.equal((await get(`/${latest.id}/attachments/2`)).status, 404);
    t.equal((await get(`/${latest.id}/attachments/-1`)).status, 400);
    const other = await d.workspace('other');
    t.equal((await d.request('GET', `/v1/inbound/messages/${latest.id}/attachments/0`, { key: other.live })).status, 404);
    t.equal((await d.request('GET', `/v1/inbound/messages/${latest.id}/raw`, { key: other.live })).status, 404);

    // Retention: raw and attachments answer 410 after 30 days; the daily purge drops the bytes.
    d.clock.set(start + 10_000 + 30 * DAY - 1000);
    t.equal((await get(`/${latest.id}/raw`)).status, 200);
    d.clock.set(start + 10_000 + 30 * DAY + 1000);
    const gone = await get(`/${latest.id}/raw`);
    t.equal(gone.status, 410);
    t.equal(gone.body.error.code, 'gone');
    t.equal((await get(`/${latest.id}/attachments/0`)).status, 410);
    t.equal((await get(`/${latest.id}`)).status, 200, 'the parsed message stays');
    t.equal(await d.app.inbound.messages.purge(), 6);
    t.equal(await d.app.inbound.messages.purge(), 0);
    const rows = await d.app.db.selectFrom('inbound_raw').select(['source', 'purged_at']).execute();
    t.ok(rows.every((r) => r.source === null && r.purged_at !== null));
  });
}
