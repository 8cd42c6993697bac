// Real-world MIME shapes (test/fixtures/*.eml, expectations in expected.json) go through the SMTP
// listener, verification, parsing and storage without a crash, each with its subject and attachments.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createAddress, sendRaw, setup } from '../helpers/inbound.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const expected = JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8')) as Record<
  string,
  { subject: string; attachments: number }
>;

t.ok(Object.keys(expected).length >= 30, 'at least 30 shapes');

t.test('every fixture is received, parsed and stored', async (t) => {
  const env = await setup(t);
  const a = await createAddress(env, { localPart: 'inbox' });
  for (const [file, want] of Object.entries(expected)) {
    const raw = readFileSync(path.join(dir, file));
    const reply = await sendRaw(env.d.smtpPort, { from: 'sender@example.org', to: [a.address] }, raw);
    const id = /stored as (rcv_\w+)/.exec(reply)?.[1];
    t.ok(id, `${file}: 250 with an id`);
    const detail = await env.d.request('GET', `/v1/inbound/messages/${id}`, { key: env.ws.live });
    t.equal(detail.status, 200, file);
    t.equal(detail.body.subject, want.subject, `${file}: subject`);
    t.equal(detail.body.attachments.length, want.attachments, `${file}: attachments`);
    for (const att of detail.body.attachments) {
      const r = await fetch(att.url, { headers: { authorization: `Bearer ${env.ws.live}` } });
      t.equal(r.status, 200, `${file}: attachment ${att.index}`);
      t.equal(Number(r.headers.get('content-length')), att.size, `${file}: attachment ${att.index} size`);
    }
    const rawRes = await fetch(detail.body.rawUrl, { headers: { authorization: `Bearer ${env.ws.live}` } });
    const stored = Buffer.from(await rawRes.arrayBuffer());
    t.ok(stored.subarray(stored.length - raw.length).equals(raw), `${file}: raw source kept byte for byte`);
  }
});
