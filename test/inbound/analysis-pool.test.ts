// The analysis threads give exactly what the event loop would: same verdicts, same
// Authentication-Results, same parsed JSON. Messages spread over several threads; the source to
// store comes back without a copy; a stopped pool refuses new work instead of hanging.
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import nodemailer from 'nodemailer';
import { once } from 'node:events';
import { createAnalyzer } from '../../src/inbound/analysis-pool.js';
import { createResolver } from '../../src/lib/dns.js';
import { startThread } from '../../src/lib/threads.js';
import { startDnsServer } from '../helpers/dns-server.js';

t.test('threads and the event loop analyze alike', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const dns = await startDnsServer({
    'sender.example': [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.1 -all' }],
    's1._domainkey.sender.example': [
      { type: 'TXT', data: `v=DKIM1; k=rsa; p=${(publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64')}` },
    ],
    '_dmarc.sender.example': [{ type: 'TXT', data: 'v=DMARC1; p=reject' }],
  });
  t.teardown(() => dns.close());
  const resolver = createResolver([dns.address], 1000);
  const threaded = createAnalyzer({ threads: 2, dns: resolver, thread: { dnsServers: [dns.address], dnsTimeoutMs: 1000 } });
  const inline = createAnalyzer({ threads: 0, dns: resolver, thread: null });
  t.teardown(() => threaded.close());

  const compose = nodemailer.createTransport({ streamTransport: true, buffer: true });
  const raws = await Promise.all(
    [1, 2, 3, 4].map(async (i) => {
      const info = await compose.sendMail({
        from: 'Alice <alice@sender.example>',
        to: 'inbox@acme.in.postern.test',
        subject: `Message ${i}`,
        text: `Body ${i}\n\nOn Monday Bob wrote:\n> earlier`,
        attachments: [{ filename: 'a.txt', content: 'attached' }],
        dkim: {
          domainName: 'sender.example',
          keySelector: 's1',
          privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        },
      });
      return Buffer.from((info.message as Buffer).toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
    }),
  );
  const input = (raw: Buffer) => ({
    raw,
    ip: '127.0.0.1',
    helo: 'client.example.org',
    mailFrom: 'alice@sender.example',
    mta: 'mx.postern.test',
    maxBodyBytes: 1 << 20,
    maxParts: 1000,
  });
  threaded.warm();
  const fromThreads = await Promise.all(raws.map((raw) => threaded.analyze(input(raw))));
  const onLoop = await Promise.all(raws.map((raw) => inline.analyze(input(raw))));
  for (let i = 0; i < raws.length; i++) {
    t.equal(fromThreads[i].subject, `Message ${i + 1}`);
    t.equal(fromThreads[i].fromEmail, 'alice@sender.example');
    t.same(JSON.parse(fromThreads[i].parsedJson), JSON.parse(onLoop[i].parsedJson), `message ${i + 1}: the same parsed fields`);
    // Only the timestamp-free parts: both carry the same verdicts.
    t.match(fromThreads[i].authHeaders, /spf=pass/);
    t.match(fromThreads[i].authHeaders, /dkim=pass/);
    t.match(fromThreads[i].authHeaders, /dmarc=pass/);
  }
  const parsed = JSON.parse(fromThreads[0].parsedJson);
  t.equal(parsed.verdicts.dkim.result, 'pass');

  // The source to store: Authentication-Results, the trace, the message. A caller done with its
  // bytes hands them to the thread (they are gone from it afterwards) and gets the source back.
  const trace = 'Received: from client.example.org by mx.postern.test\r\n';
  const given = Buffer.alloc(raws[0].length);
  raws[0].copy(given);
  const kept = Buffer.from(raws[0]);
  const handed = await threaded.analyze({ ...input(given), trace }, { giveRaw: true });
  t.equal(given.length, 0, 'the bytes went to the thread, not a copy');
  t.equal(Buffer.from(handed.source).toString('latin1'), handed.authHeaders + trace + raws[0].toString('latin1'));
  const copied = await threaded.analyze({ ...input(kept), trace });
  t.equal(kept.length, raws[0].length, 'without giveRaw the caller keeps its bytes');
  t.equal(Buffer.from(copied.source).toString('latin1').slice(copied.authHeaders.length), trace + raws[0].toString('latin1'));
  const pooled = Buffer.from('From: a@b\r\n\r\nshort\r\n'); // a slice of Node's shared pool: never handed over
  await threaded.analyze(input(pooled), { giveRaw: true });
  t.equal(pooled.toString(), 'From: a@b\r\n\r\nshort\r\n', 'a pooled buffer is copied, not taken');

  // Bytes with headroom (as the SMTP listener gives them): the lines go in front, in the same
  // memory, and come back with it; lines longer than the headroom are stored through a copy.
  const withRoom = (raw: Buffer, room: number) => {
    const whole = Buffer.alloc(room + raw.length, 0x7e);
    raw.copy(whole, room);
    return whole.subarray(room);
  };
  for (const analyzer of [threaded, inline]) {
    const room = withRoom(raws[0], 2048);
    const memory = room.buffer;
    const a = await analyzer.analyze({ ...input(room), trace, headroom: 2048 }, { giveRaw: true });
    t.equal(Buffer.from(a.source).toString('latin1'), a.authHeaders + trace + raws[0].toString('latin1'), 'the lines, then the message');
    t.equal(a.source.buffer.byteLength, 2048 + raws[0].length, 'in the memory the message came in, not a copy of it');
    t.equal(a.source.byteOffset + a.source.length, a.source.buffer.byteLength, 'ending where the message ends');
    if (analyzer === inline) t.equal(a.source.buffer, memory, 'on the event loop, the very same memory');
    const tight = withRoom(raws[1], 16);
    const b = await analyzer.analyze({ ...input(tight), trace, headroom: 16 }, { giveRaw: true });
    t.equal(Buffer.from(b.source).toString('latin1'), b.authHeaders + trace + raws[1].toString('latin1'), 'lines longer than the headroom');
    t.equal(b.source.buffer.byteLength, b.source.length, 'stored through a copy');
    const kept = withRoom(raws[2], 2048);
    const c = await analyzer.analyze({ ...input(kept), trace, headroom: 2048 });
    t.equal(Buffer.from(c.source).toString('latin1'), c.authHeaders + trace + raws[2].toString('latin1'), 'bytes the caller keeps');
    t.equal(kept.toString('latin1'), raws[2].toString('latin1'), 'are left as they were');
  }
  t.equal(parsed.strippedReply, 'Body 1');
  t.equal(parsed.attachments.length, 1);

  await threaded.close();
  await t.rejects(threaded.analyze(input(raws[0])), /stopped/, 'a stopped pool refuses work');
});

t.test('text that quotes nothing is stored once', async (t) => {
  const inline = createAnalyzer({ threads: 0, dns: createResolver(['127.0.0.1:9'], 200), thread: null });
  const raw = Buffer.from(
    'From: a@sender.example\r\nTo: inbox@acme.in.postern.test\r\nSubject: plain\r\n\r\nNo quotes here.\r\nSecond line.\r\n',
  );
  const a = await inline.analyze({ raw, ip: '127.0.0.1', helo: 'h', mailFrom: '', mta: 'mx', maxBodyBytes: 1 << 20, maxParts: 100 });
  const parsed = JSON.parse(a.parsedJson);
  t.equal(parsed.text, 'No quotes here.\nSecond line.\n', 'the text as parsed, line end and all');
  // Before, a text ending in a line break differed from its trimmed reply, and both were stored.
  t.notOk('strippedReply' in parsed, 'no second copy of the body');
  t.equal(a.parsedJson.split('Second line').length - 1, 1, 'the body appears once in the column');
});

t.test('an analysis thread starts with the young generation it is given', async (t) => {
  // memory.analysisYoungGenerationMb reaches the thread as V8's limit: 24 MB is 8 MB semi-spaces.
  const pool = new URL('../../src/inbound/analysis-pool.ts', import.meta.url).href;
  const data = { dnsServers: ['127.0.0.1:9'], dnsTimeoutMs: 100 };
  const limited = startThread(pool, 'analysis-worker', data, { maxYoungGenerationSizeMb: 24 });
  const own = startThread(pool, 'analysis-worker', data);
  t.teardown(() => Promise.all([limited.terminate(), own.terminate()]));
  await Promise.all([once(limited, 'online'), once(own, 'online')]);
  t.equal(limited.resourceLimits?.maxYoungGenerationSizeMb, 24);
  t.not(own.resourceLimits?.maxYoungGenerationSizeMb, 24, 'without a limit, V8 sizes it');
});
