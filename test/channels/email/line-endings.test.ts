// SMTP smuggling, the sending side: whatever a send key puts in a subject, a text or html body, a
// variable or an attachment, Postern must put only CRLF line endings on the wire, so a remote MX
// can never read one message as two (`<CR>.<CR><LF>` followed by SMTP commands, and the other
// end-of-data forms of SEC Consult's SMTP smuggling research). Every end-of-data variant is sent
// through the real email transport to a loopback smtp-server acting as the remote MX; the client's
// bytes are checked as they crossed the socket, and every message must arrive whole with a DKIM
// signature that mailauth verifies.
//
// The variants: every string of 1 to 6 characters over the alphabet {CR, LF, '.', 'x'} that holds
// at least one CR or LF ('x' stands for any other character): 5,334 strings, which include every
// end-of-data sequence (CRLF.CRLF, LF.LF, CR.CR, CR.CRLF, LF.CRLF, CRLF.LF, …) with and without
// text around it, and every bare line ending. The composer gets all 5,334 in every field. On the
// wire each variant is put between ordinary characters, so a variant with an 'x' at either end or
// two 'x' in a row reads exactly like a shorter one already sent (the line endings and dots, and
// what stands next to each, are the same); the 2,620 that remain are each sent as one message.
import t from 'tap';
import { simpleParser } from 'mailparser';
import { composeSigned } from '../../../src/channels/email/compose.js';
import { bootDaemon } from '../../helpers/daemon.js';
import { testDatabases } from '../../helpers/databases.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { addVerifiedDomain, emailTransport, generateDkimKey, makeDelivery, startSink } from '../../helpers/smtp-sink.js';
const { authenticate } = (await import('mailauth')) as { authenticate: (raw: Buffer, opts: object) => Promise<any> };

const ALPHABET = ['\r', '\n', '.', 'x'];

/** Every string of length 1..maxLength over ALPHABET that holds a CR or an LF. */
function endOfDataVariants(maxLength = 6): string[] {
  const out: string[] = [];
  let level = [''];
  for (let n = 1; n <= maxLength; n++) {
    level = level.flatMap((prefix) => ALPHABET.map((c) => prefix + c));
    out.push(...level.filter((s) => s.includes('\r') || s.includes('\n')));
  }
  return out;
}

/** The variants that differ on the wire once put between ordinary characters (see above). */
const distinctInText = (variants: string[]) => variants.filter((v) => !v.startsWith('x') && !v.endsWith('x') && !v.includes('xx'));

/** Index of the first CR not followed by LF or LF not preceded by CR, or -1. */
function bareLineEnding(buf: Buffer): number {
  for (let i = buf.indexOf(0x0d); i !== -1; i = buf.indexOf(0x0d, i + 1)) if (buf[i + 1] !== 0x0a) return i;
  for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, i + 1)) if (i === 0 || buf[i - 1] !== 0x0d) return i;
  return -1;
}

const canonical = (s: string) => s.replace(/\r\n|\r|\n/g, '\r\n');

// The four ways a text part leaves the composer: 7bit (short ASCII lines), Postern's own
// quoted-printable (ASCII with a line over 76 characters), nodemailer's quoted-printable (mostly
// ASCII with a few other characters) and nodemailer's base64 (mostly non-ASCII).
const carriers = [
  (v: string, i: number) => `seven ${i} ${v} MAIL FROM:<evil@attacker.example> end${i}`,
  (v: string, i: number) => `${'long '.repeat(20)}${i} ${v} RCPT TO:<victim@example.net> end${i}`,
  (v: string, i: number) => `Café ${i} ${v} DATA end${i}`,
  (v: string, i: number) => `日本語のテキスト ${i} ${v} 終わり${i}`,
];

for (const db of testDatabases()) {
  t.test(`every end-of-data variant leaves with CRLF line endings only, whole and DKIM-signed (${db})`, async (t) => {
    t.equal(endOfDataVariants().length, 5334, 'strings of 1..6 characters over {CR, LF, ".", "x"} holding a CR or LF');
    const variants = distinctInText(endOfDataVariants());
    t.equal(variants.length, 2620, 'of which 2,620 differ between ordinary characters');
    t.ok(['\r\n.\r\n', '\n.\n', '\r.\r', '\r.\r\n', '\n.\r\n', '\r\n.\n', '\r\n.\r', '\rx.\r'].every((v) => variants.includes(v)));

    const sink = await startSink(t, { wire: true });
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, { db, env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(sink.port) } });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const app = d.app;
    const transport = emailTransport(t, app);
    dns.set('postern._domainkey.acme.example', [{ type: 'TXT', data: await addVerifiedDomain(app, ws.id, 'acme.example') }]);

    const sent = new Map<string, number>();
    const failures: string[] = [];
    const batch = 16;
    for (let start = 0; start < variants.length; start += batch) {
      await Promise.all(
        variants.slice(start, start + batch).map(async (v, k) => {
          const i = start + k;
          const dl = makeDelivery(
            app,
            ws.id,
            {
              fromOverride: 'news@acme.example',
              attachments: [
                { filename: 'v.txt', contentType: 'text/plain', content: Buffer.from(`a${v}b`).toString('base64') },
                {
                  filename: 'v.eml',
                  contentType: 'message/rfc822',
                  content: Buffer.from(`Subject: inner${v}\r\n\r\nbody${v}.`).toString('base64'),
                },
              ],
            },
            {
              subject: `S${i} ${v} QUIT`,
              text: carriers[i % 4](v, i),
              html: `<p>${carriers[(i + 2) % 4](v, i)}</p>`,
            },
          );
          sent.set(dl.message.publicId, i);
          const out = await transport.deliver(dl);
          if (out.kind !== 'delivered') failures.push(`${i} ${JSON.stringify(v)}: ${out.kind}`);
        }),
      );
    }
    t.same(failures, [], 'every variant was delivered');
    t.equal(sink.received.length, variants.length, 'the MX received exactly one message per send');

    // On the wire: no bare CR or LF anywhere in what the client sent, and exactly one end of data
    // (a line that is a lone dot) per message.
    let bare = 0;
    let ends = 0;
    let mails = 0;
    for (const conn of sink.wire) {
      const bytes = Buffer.concat(conn);
      if (bareLineEnding(bytes) !== -1) bare++;
      const lines = bytes.toString('latin1').split('\r\n');
      ends += lines.filter((l) => l === '.').length;
      mails += lines.filter((l) => l.startsWith('MAIL FROM:<bounces+')).length;
    }
    t.equal(bare, 0, 'no connection carried a bare CR or LF');
    t.equal(ends, variants.length, 'one end-of-data per message');
    t.equal(mails, variants.length, 'one MAIL FROM per message: nothing smuggled was read as a command');

    // Each message arrived whole: its own Message-ID once, and a DKIM signature over its body and
    // headers that mailauth verifies.
    const cache = new Map<string, Promise<unknown>>();
    const resolver = (name: string, type: string) => {
      const key = `${type} ${name}`;
      if (!cache.has(key)) cache.set(key, app.dns.resolve(name, type));
      return cache.get(key)!;
    };
    const seen = new Set<string>();
    const broken: string[] = [];
    for (let n = 0; n < sink.received.length; n += batch) {
      await Promise.all(
        sink.received.slice(n, n + batch).map(async (r) => {
          const id = /^Message-ID: <(msg_[0-9A-Za-z]+)@/im.exec(r.raw.toString('latin1'))?.[1] ?? '';
          const i = sent.get(id);
          if (i === undefined || seen.has(id)) return void broken.push(`unknown or repeated ${id}`);
          seen.add(id);
          if (bareLineEnding(r.raw) !== -1) broken.push(`${i}: bare line ending after unstuffing`);
          const auth = await authenticate(r.raw, {
            ip: '127.0.0.1',
            helo: 'mx.postern.test',
            sender: r.from,
            mta: 'mx.example.net',
            resolver,
            disableArc: true,
            disableDmarc: true,
            disableBimi: true,
          });
          if (auth.dkim.results[0]?.status.result !== 'pass')
            broken.push(`${i} ${JSON.stringify(variants[i])}: dkim ${auth.dkim.results[0]?.status.result}`);
        }),
      );
    }
    t.same(broken, [], 'every message whole, once, and DKIM-verified');

    // What the recipient reads: every line ending became CRLF (a line break), nothing else changed.
    for (const i of [0, 1, 2, 3, 101, 1313, 2619]) {
      const r = sink.received.find((x) => x.raw.toString('latin1').includes(`<${[...sent].find(([, n]) => n === i)![0]}@`))!;
      const parsed = await simpleParser(r.raw);
      const norm = (s: string) => canonical(s).replace(/\r\n/g, '\n');
      // mailparser appends the text of the message/rfc822 attachment to `text`.
      t.equal(
        parsed.text?.slice(0, norm(carriers[i % 4](variants[i], i)).length),
        norm(carriers[i % 4](variants[i], i)),
        `text of variant ${i}`,
      );
      t.equal(parsed.subject?.replace(/\s+/g, ' '), `S${i} ${variants[i]} QUIT`.replace(/\s+/g, ' '), `subject of variant ${i}`);
      t.equal(parsed.attachments[0].content.toString('latin1'), `a${variants[i]}b`, 'a text attachment keeps its bytes (base64)');
    }
  });

  t.test(
    `the composer alone: all 5,334 variants through each encoding path, in headers and in a message/rfc822 attachment (${db})`,
    async (t) => {
      const key = generateDkimKey();
      const signing = { domain: 'acme.example', selector: 'postern', privateKey: key.privateKey };
      const variants = endOfDataVariants();
      const bad: string[] = [];
      for (const [i, v] of variants.entries()) {
        // Two messages per variant: its text and html parts take the four encoding paths between them.
        for (const c of [0, 2]) {
          const raw = await composeSigned({
            input: {
              from: { address: 'news@acme.example', name: `News${v}` },
              to: 'alice@example.net',
              cc: [],
              replyTo: null,
              subject: `S${v}`,
              text: carriers[c](v, i),
              html: carriers[c + 1](v, i),
              attachments: [
                { filename: `f${v}.eml`, contentType: 'message/rfc822', content: Buffer.from(`X: y${v}\r\n\r\n${v}`).toString('base64') },
              ],
              messageId: `<m${i}@x>`,
              date: new Date(0),
              unsubscribeUrl: null,
            },
            // Signing comes after the canonical form; a sample is enough to show it keeps it.
            key: i % 50 === 0 ? signing : null,
          });
          if (bareLineEnding(raw) !== -1) bad.push(`${JSON.stringify(v)} via carriers ${c} and ${c + 1}`);
        }
      }
      t.same(bad.slice(0, 10), [], `no bare line ending in any of the ${variants.length * 2} composed messages`);
    },
  );

  t.test(`through the API: variables that carry end-of-data sequences are sent with CRLF only (${db})`, async (t) => {
    const sink = await startSink(t, { wire: true });
    const dns = await startDnsServer({
      'example.net': [{ type: 'MX', data: { preference: 10, exchange: 'mx.example.net' } }],
      'mx.example.net': [{ type: 'A', data: '127.0.0.1' }],
    });
    t.teardown(() => dns.close());
    const d = await bootDaemon(t, { db, env: { POSTERN_DNS_SERVERS: dns.address, POSTERN_DELIVERY_PORT: String(sink.port) } });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const smuggled =
      '\r.\r\nMAIL FROM:<evil@attacker.example>\r\nRCPT TO:<victim@example.net>\r\nDATA\r\nSubject: forged\r\n\r\nforged\r\n.\r\n';
    const classic = ['\r\n.\r\n', '\n.\n', '\r.\r', '\r.\r\n', '\n.\r\n', '\r\n.\n', '\n.\r', smuggled];
    const ids: string[] = [];
    for (const v of classic) {
      const r = await d.request('POST', '/v1/send-raw', {
        key: ws.live,
        body: {
          to: 'alice@example.net',
          channel: 'email',
          interpolate: true,
          vars: { v },
          content: { subject: 'Hi {{v}}!', html: '<p>{{v}}</p><p>{{{v}}}</p>', text: 'a{{v}}b' },
        },
      });
      t.equal(r.status, 202);
      ids.push(r.body.id);
    }
    await d.app.workers.find((w) => w.name === 'dispatcher')!.tick();
    for (const id of ids) t.match((await d.request('GET', `/v1/messages/${id}`, { key: ws.live })).body, { status: 'delivered' });
    t.equal(sink.received.length, classic.length, 'one message each; the forged one never exists');
    t.notOk(sink.received.some((r) => r.to.includes('victim@example.net')));
    const wire = Buffer.concat(sink.wire.flat());
    t.equal(bareLineEnding(wire), -1, 'no bare CR or LF on the wire');
    t.equal(
      wire
        .toString('latin1')
        .split('\r\n')
        .filter((l) => l === '.').length,
      classic.length,
      'one end-of-data per message',
    );
  });
}
