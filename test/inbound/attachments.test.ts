// Attachment names and types as hostile senders write them: a control byte in Content-Type, a
// 200 KB media type, a filename of thousands of characters, a name whose cut used to split a
// surrogate pair. The detail lists them made safe and every download answers 200 with sane, bounded
// headers (RFC 6266 filename*), also for messages stored before they were made safe at parse time.
import t from 'tap';
import { testDatabases } from '../helpers/databases.js';
import { createAddress, sendRaw, setup } from '../helpers/inbound.js';

const PART = 'AAECAwQFBgc='; // 8 bytes: 00 01 … 07

function mail(parts: { type: string; filename: string }[]): string {
  const head =
    'From: Sender <sender@example.org>\r\nTo: inbox@acme.in.postern.test\r\nSubject: Hostile names\r\nMIME-Version: 1.0\r\n' +
    'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nSee the files.\r\n';
  const body = parts.map(
    (p) =>
      `--b\r\nContent-Type: ${p.type}\r\nContent-Disposition: attachment;\r\n filename="${p.filename}"\r\n` +
      `Content-Transfer-Encoding: base64\r\n\r\n${PART}\r\n`,
  );
  return head + body.join('') + '--b--\r\n';
}

/** A filename as mailparser reads it from an RFC 2047 encoded word. */
const encodedWord = (s: string) => `=?UTF-8?B?${Buffer.from(s).toString('base64')}?=`;

for (const db of testDatabases()) {
  t.test(`hostile attachment names and types download fine (${db})`, async (t) => {
    const env = await setup(t, { db });
    const a = await createAddress(env, { localPart: 'inbox' });
    const auth = { authorization: `Bearer ${env.ws.live}` };
    const reply = await sendRaw(
      env.d.smtpPort,
      { from: 'sender@example.org', to: [a.address] },
      mail([
        { type: 'application/pd\x01f', filename: 'report.pdf' },
        { type: 'application/' + 'x'.repeat(200_000), filename: 'huge-type.bin' },
        { type: 'application/pdf', filename: encodedWord('€'.repeat(20_000) + '.pdf') },
        { type: 'image/png', filename: encodedWord('a'.repeat(199) + '😀😀.png') },
        { type: 'text/plain', filename: encodedWord('invoice\u202Efdp.exe') },
      ]),
    );
    const id = /rcv_\w+/.exec(reply)?.[0];
    t.ok(id, reply);

    // What holds for every attachment: a media type, a bounded name, the same name in the detail and
    // in the download's filename*, and the bytes.
    const check = async (label: string) => {
      const detail = (await env.d.request('GET', `/v1/inbound/messages/${id}`, { key: env.ws.live })).body;
      t.same(
        detail.attachments.map((x: { contentType: string }) => x.contentType),
        ['application/octet-stream', 'application/octet-stream', 'application/pdf', 'image/png', 'text/plain'],
        `${label}: media types`,
      );
      for (const att of detail.attachments) {
        t.ok(Buffer.byteLength(att.filename) <= 255, `${label}: name of attachment ${att.index} within 255 bytes`);
        const res = await fetch(att.url, { headers: auth });
        t.equal(res.status, 200, `${label}: attachment ${att.index} downloads`);
        t.equal(res.headers.get('content-type'), att.contentType);
        const disposition = res.headers.get('content-disposition') ?? '';
        t.ok(disposition.length < 1200, `${label}: Content-Disposition of ${disposition.length} bytes`);
        t.match(disposition, /^attachment; filename="[\x20-\x7e]+"; filename\*=UTF-8''[\x21-\x7e]+$/);
        const star = /filename\*=UTF-8''(.+)$/.exec(disposition)?.[1] ?? '';
        t.equal(decodeURIComponent(star), att.filename, `${label}: filename* carries the listed name`);
        t.same(Buffer.from(await res.arrayBuffer()), Buffer.from([0, 1, 2, 3, 4, 5, 6, 7]));
      }
      return detail.attachments.map((x: { filename: string }) => x.filename) as string[];
    };
    const [, , long, emoji, bidi] = await check('parsed now');
    t.match(long, /^€+\.pdf$/, 'a long name is cut with its extension kept');
    t.equal(emoji, 'a'.repeat(199) + '😀😀.png', 'no pair is split');
    t.equal(bidi, 'invoice_fdp.exe', 'no bidi override');

    // As an earlier version stored them: the type as sent, the name cut in the middle of a pair.
    const row = await env.d.app.db
      .selectFrom('received_messages')
      .select(['id', 'parsed'])
      .where('public_id', '=', id!)
      .executeTakeFirstOrThrow();
    const parsed = JSON.parse(row.parsed);
    parsed.attachments[0].contentType = 'application/pd\x01f';
    parsed.attachments[1].contentType = 'application/' + 'x'.repeat(200_000);
    parsed.attachments[2].filename = '€'.repeat(200);
    parsed.attachments[3].filename = 'a'.repeat(199) + '\uD83D';
    parsed.attachments[4].filename = 'invoice\u202Efdp.exe';
    await env.d.app.db
      .updateTable('received_messages')
      .set({ parsed: JSON.stringify(parsed) })
      .where('id', '=', row.id)
      .execute();
    const names = await check('stored earlier');
    t.equal(names[2], '€'.repeat(85), 'made safe on the way out: cut to 255 bytes');
    t.equal(names[3], 'a'.repeat(199), 'a lone surrogate is dropped');
    t.equal(names[4], 'invoice_fdp.exe');
  });
}
