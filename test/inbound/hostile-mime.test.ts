// Messages that used to get a 451 on every attempt (senders retried them for days): more MIME parts
// than the parser takes, thousands of empty parts, HTML nested 100,000 deep, a message cut off in a
// part's header (test/fixtures/hostile/generate.py). Each now gets a final answer over real SMTP in
// bounded time — 250 and stored, marked `truncated` where the parsed fields are incomplete — its
// attachments download, and the daemon keeps receiving.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { createAddress, sendRaw, setup, simpleMail } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'hostile');
const fixture = (name: string) => readFileSync(path.join(dir, name));

for (const db of testDatabases()) {
  t.test(`hostile MIME shapes get a final answer and are stored (${db})`, async (t) => {
    const env = await setup(t, { db });
    const a = await createAddress(env, { localPart: 'inbox' });
    const auth = { authorization: `Bearer ${env.ws.live}` };

    const deliver = async (t: Test, name: string) => {
      const started = performance.now();
      const reply = await sendRaw(env.d.smtpPort, { from: 'sender@example.org', to: [a.address] }, fixture(name)).catch(
        (err: Error) => err.message,
      );
      const ms = performance.now() - started;
      t.match(reply, /^250 2\.0\.0 Ok: stored as rcv_/, `${name}: stored`);
      t.ok(ms < 20_000, `${name}: answered in ${Math.round(ms)} ms`);
      const id = /rcv_\w+/.exec(reply)?.[0];
      const detail = await env.d.request('GET', `/v1/inbound/messages/${id}`, { key: env.ws.live });
      t.equal(detail.status, 200, `${name}: readable`);
      return detail.body;
    };

    t.test('1,000 attachments: the body and the attachments up to the part limit', async (t) => {
      const m = await deliver(t, 'many-attachments.eml');
      t.equal(m.subject, '1000 attachments');
      t.equal(m.truncated, true);
      t.equal(m.text.trim(), 'The body before the files.');
      t.ok(m.attachments.length > 900 && m.attachments.length < 1000, `${m.attachments.length} attachments listed`);
      t.same(m.attachments[0], {
        index: 0,
        filename: 'f0.bin',
        contentType: 'application/octet-stream',
        size: 8,
        url: m.attachments[0].url,
      });
      const last = m.attachments[m.attachments.length - 1];
      const first = await fetch(m.attachments[0].url, { headers: auth });
      t.equal(first.status, 200);
      t.same(Buffer.from(await first.arrayBuffer()), Buffer.from([0, 1, 2, 3, 4, 5, 6, 7]));
      const lastRes = await fetch(last.url, { headers: auth });
      t.equal(lastRes.status, 200, 'the last listed attachment downloads');
      t.match(lastRes.headers.get('content-disposition'), `filename="${last.filename}"`);
      const beyond = await env.d.request('GET', `/v1/inbound/messages/${m.id}/attachments/${m.attachments.length}`, { key: env.ws.live });
      t.equal(beyond.status, 404, 'past the listed attachments: not found');
      t.equal(beyond.body.error.code, 'not_found');
    });

    t.test('5,000 empty parts', async (t) => {
      const m = await deliver(t, 'empty-parts.eml');
      t.equal(m.subject, '5000 empty parts');
      t.equal(m.truncated, true);
      t.same(m.attachments, []);
    });

    t.test('100,000 nested <div>s', async (t) => {
      const m = await deliver(t, 'nested-divs.eml');
      t.equal(m.subject, 'Nested divs');
      t.equal(m.truncated, true);
      t.type(m.text, 'string');
      t.ok(Buffer.byteLength(m.html) <= 1048576);
    });

    t.test('a message cut off after 246 bytes, in a part header', async (t) => {
      const m = await deliver(t, 'truncated-246.eml');
      t.match(m.subject, /^Cutx+$/);
      t.same(
        m.attachments.map((x: { contentType: string }) => x.contentType),
        ['application/octet-stream'],
        'the part with an empty Content-Type is an octet stream',
      );
      for (const att of m.attachments) t.equal((await fetch(att.url, { headers: auth })).status, 200);
    });

    t.test('the daemon keeps receiving', async (t) => {
      const reply = await sendRaw(
        env.d.smtpPort,
        { from: 'sender@example.org', to: [a.address] },
        simpleMail({ to: a.address, subject: 'After' }),
      );
      t.match(reply, /^250 /);
      t.notOk(
        env.d.logs.some((l) => /"level":50/.test(l)),
        'nothing was logged as an error',
      );
    });
  });
}
