// Real-world MIME shapes (test/fixtures/*.eml, expectations in expected.json) go through the SMTP
// listener, verification, parsing and storage without a crash, each with its subject, its decoded
// text and html, and each attachment's bytes (SHA-256). The decoded values come from Python's email
// package (test/fixtures/decode.py), not from Postern's own output.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createAddress, sendRaw, setup } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const expected = JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8')) as Record<
  string,
  {
    subject: string;
    attachments: number;
    text: string;
    html: string;
    /** Per attachment: the hash of its bytes, or for corrupt base64 the bytes every decoder agrees they start with. */
    sha256: (string | { prefix: string })[];
  }
>;

t.ok(Object.keys(expected).length >= 30, 'at least 30 shapes');

for (const db of testDatabases()) {
  t.test(`every fixture is received, parsed and stored (${db})`, async (t) => {
    const env = await setup(t, { db });
    const a = await createAddress(env, { localPart: 'inbox' });
    for (const [file, want] of Object.entries(expected)) {
      const raw = readFileSync(path.join(dir, file));
      const reply = await sendRaw(env.d.smtpPort, { from: 'sender@example.org', to: [a.address] }, raw);
      const id = /stored as (rcv_\w+)/.exec(reply)?.[1];
      t.ok(id, `${file}: 250 with an id`);
      const detail = await env.d.request('GET', `/v1/inbound/messages/${id}`, { key: env.ws.live });
      t.equal(detail.status, 200, file);
      t.equal(detail.body.subject, want.subject, `${file}: subject`);
      t.equal(detail.body.text, want.text, `${file}: text`);
      t.equal(detail.body.html, want.html, `${file}: html`);
      t.equal(detail.body.attachments.length, want.attachments, `${file}: attachments`);
      t.equal(want.sha256.length, want.attachments, `${file}: expected.json has a hash per attachment`);
      for (const att of detail.body.attachments) {
        const r = await fetch(att.url, { headers: { authorization: `Bearer ${env.ws.live}` } });
        t.equal(r.status, 200, `${file}: attachment ${att.index}`);
        t.equal(Number(r.headers.get('content-length')), att.size, `${file}: attachment ${att.index} content-length`);
        const bytes = Buffer.from(await r.arrayBuffer());
        t.equal(bytes.length, att.size, `${file}: attachment ${att.index} size`);
        const expect = want.sha256[att.index];
        if (typeof expect === 'string')
          t.equal(createHash('sha256').update(bytes).digest('hex'), expect, `${file}: attachment ${att.index} bytes`);
        else
          t.equal(
            bytes.subarray(0, expect.prefix.length / 2).toString('hex'),
            expect.prefix,
            `${file}: attachment ${att.index} first bytes`,
          );
      }
      const rawRes = await fetch(detail.body.rawUrl, { headers: { authorization: `Bearer ${env.ws.live}` } });
      const stored = Buffer.from(await rawRes.arrayBuffer());
      t.ok(stored.subarray(stored.length - raw.length).equals(raw), `${file}: raw source kept byte for byte`);
    }
  });
}
