// Delivery threads give exactly what rendering and composing on the event loop give (content, MIME
// bytes, DKIM signature), report a render error as the same error, and lose no job when a thread
// dies; an SMTP pool hosted on one answers with the same results and error fields as one on the
// event loop.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { createLogger } from '../../../src/lib/logger.js';
import type { ComposeRequest } from '../../../src/channels/email/compose.js';
import { createDeliveryThreads, onEventLoop } from '../../../src/channels/email/delivery-threads.js';
import type { RenderRequest } from '../../../src/channels/render.js';
import { startSink } from '../../helpers/smtp-sink.js';

const log = createLogger('silent');
const html = `<html><body><h1>Hello {{name}}</h1><p>${'Lorem ipsum dolor sit amet, '.repeat(40)}</p><a href="https://example.com/x">link</a></body></html>`;

const renders: [string, RenderRequest][] = [
  [
    'raw email, text derived from html',
    { channel: 'email', content: JSON.stringify({ subject: 'Hi {{name}}', html, preheader: 'pre' }), vars: null },
  ],
  [
    'template email with vars',
    {
      channel: 'email',
      content: JSON.stringify({ subject: 'Hi {{name}}', html, preheader: 'for {{name}}' }),
      vars: JSON.stringify({ name: 'Ann' }),
    },
  ],
  [
    'template email with text',
    { channel: 'email', content: JSON.stringify({ subject: 'S', html, text: 'Text {{name}}' }), vars: JSON.stringify({ name: 'Bob' }) },
  ],
  ['sms', { channel: 'sms', content: JSON.stringify({ body: 'Code {{code}}' }), vars: JSON.stringify({ code: 42 }) }],
  [
    'push',
    {
      channel: 'push',
      content: JSON.stringify({ title: 'T', body: 'B {{x}}', data: { a: '{{x}}' }, badge: 3 }),
      vars: JSON.stringify({ x: 'y' }),
    },
  ],
];

const { privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const compose = (key: boolean): ComposeRequest => ({
  input: {
    from: { address: 'news@acme.example', name: 'Acmé News' },
    to: 'ann@example.net',
    cc: ['carol@other.org'],
    replyTo: null,
    subject: 'Grüße',
    html: `<p>${'x = y, '.repeat(200)}</p>`,
    text: 'plain',
    attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('attached').toString('base64') }],
    messageId: '<msg_1@mx.test>',
    date: new Date('2025-01-31T10:00:00Z'),
    unsubscribeUrl: 'https://p.test/u/tok',
  },
  key: key ? { domain: 'acme.example', selector: 'postern', privateKey } : null,
});

// MailComposer draws random MIME boundaries; compare with them normalised.
const boundaries = (raw: Buffer) =>
  raw
    .toString()
    .replace(/--_NmP-[0-9a-f-]+/g, '--B')
    .replace(/boundary="[^"]+"/g, 'boundary="B"');

t.test('a delivery thread gives what the event loop gives', async (t) => {
  const threads = createDeliveryThreads({ threads: 1, log });
  t.teardown(() => threads.close());
  for (const [name, req] of renders) t.same(await threads.render(req), await onEventLoop.render(req), name);
  const [a, b] = await Promise.all([threads.compose(compose(false)), onEventLoop.compose(compose(false))]);
  t.ok(Buffer.isBuffer(a), 'a Buffer comes back');
  t.equal(boundaries(a), boundaries(b), 'same MIME message');
  const signed = await threads.compose(compose(true));
  t.match(signed.toString(), /^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=acme\.example;/);
  await t.rejects(
    threads.render({ channel: 'email', content: JSON.stringify({ subject: '{{#open}}', html: '' }), vars: '{}' }),
    /Unclosed section/,
    'a render error is the same error',
  );
  const many = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      threads.render({ channel: 'sms', content: JSON.stringify({ body: `n{{i}}` }), vars: JSON.stringify({ i }) }),
    ),
  );
  t.same(
    many.map((o: unknown) => (o as { body: string }).body),
    Array.from({ length: 50 }, (_, i) => `n${i}`),
    'each answer goes to its own job',
  );
});

t.test('jobs of a thread that dies run on the event loop', async (t) => {
  const lines: string[] = [];
  let starts = 0;
  const threads = createDeliveryThreads({
    threads: 1,
    log: createLogger('error', { write: (s: string) => void lines.push(s) }),
    // A thread that takes the job and exits without answering.
    start: () => (starts++, new Worker(`require('node:worker_threads').parentPort.on('message', () => process.exit(3))`, { eval: true })),
  });
  t.teardown(() => threads.close());
  const req = renders[0][1];
  t.same(await threads.render(req), await onEventLoop.render(req), 'the job still completes');
  t.same(await threads.render(req), await onEventLoop.render(req), 'and the next one, on a new thread');
  t.equal(starts, 2);
  t.match(lines.join(''), /delivery thread stopped; its jobs run on the event loop/);
  for (let i = 0; i < 3; i++) await threads.render(req);
  t.equal(starts, 4, 'after repeated deaths no new thread is started');
  t.match(lines.join(''), /delivery work stays on the event loop from now on/);
});

t.test('after close, jobs run on the event loop', async (t) => {
  const threads = createDeliveryThreads({ threads: 2, log });
  await threads.render(renders[3][1]);
  await threads.close();
  t.same(await threads.render(renders[3][1]), { body: 'Code 42' });
});

t.test('an SMTP pool hosted on a delivery thread answers as the in-process pool does', async (t) => {
  const sink = await startSink(t, {
    rcpt: (a) =>
      a.startsWith('nobody@')
        ? { code: 550, message: '5.1.1 no such user' }
        : a.startsWith('later@')
          ? { code: 451, message: '4.3.0 try later' }
          : undefined,
  });
  const threads = createDeliveryThreads({ threads: 1, log });
  t.teardown(() => threads.close());
  const poolOpts = {
    name: 'mx.postern.test',
    port: sink.port,
    tls: 'none' as const,
    maxConnections: 10,
    maxConnectionsPerHost: 2,
    messagesPerConnection: 100,
    idleTimeoutMs: 1000,
    timeoutMs: 5000,
    log,
  };
  const hosted = threads.smtpPool(poolOpts);
  const local = onEventLoop.smtpPool(poolOpts);
  t.teardown(() => local.close());
  const target = { host: 'mx.example.net', address: '127.0.0.1' };
  const raw = await threads.compose(compose(false));

  const ok = await hosted.send(target, { from: 'bounces+msg_1@b.test', to: ['ann@example.net', 'nobody@example.net'] }, raw);
  t.same(ok.accepted, ['ann@example.net']);
  t.equal(ok.rejected.length, 1);
  t.ok(ok.rejected[0].error instanceof Error, 'a rejection is an Error again');
  t.match(ok.rejected[0], { address: 'nobody@example.net', error: { responseCode: 550, command: 'RCPT TO', response: /5\.1\.1/ } });
  t.match(ok.response, /^250/);
  t.equal(sink.received.at(-1)!.raw.toString(), raw.toString(), 'the message arrives byte for byte');

  const errorOf = async (pool: typeof hosted) =>
    pool.send(target, { from: 'b@b.test', to: ['later@example.net'] }, raw).then(
      () => null,
      (e: any) => e,
    );
  const [viaThread, inProcess] = [await errorOf(hosted), await errorOf(local)];
  t.ok(viaThread instanceof Error);
  for (const k of ['message', 'code', 'responseCode', 'response', 'command']) t.same(viaThread[k], inProcess[k], `same ${k}`);
  t.same(
    viaThread.rejectedErrors.map((e: any) => [e.recipient, e.responseCode]),
    inProcess.rejectedErrors.map((e: any) => [e.recipient, e.responseCode]),
  );
  await hosted.close();
});

t.test('an SMTP transaction on a thread that dies fails as a dropped connection', async (t) => {
  const threads = createDeliveryThreads({
    threads: 1,
    log,
    start: () => new Worker(`require('node:worker_threads').parentPort.on('message', () => process.exit(3))`, { eval: true }),
  });
  t.teardown(() => threads.close());
  const pool = threads.smtpPool({
    name: 'x',
    port: 1,
    tls: 'none',
    maxConnections: 1,
    maxConnectionsPerHost: 1,
    messagesPerConnection: 1,
    idleTimeoutMs: 10,
    timeoutMs: 1000,
    log,
  });
  await t.rejects(pool.send({ host: 'h', address: '127.0.0.1' }, { from: 'a@b', to: ['c@d'] }, Buffer.from('x')), { code: 'ECONNECTION' });
});

// A delivery thread starts with what rendering, composing and SMTP need: not zod (the contract's
// schemas are the HTTP API's), which once came in through the channel hints and the registry and
// doubled the thread's start (46 → 111 ms of CPU, docs/performance.md).
t.test("a delivery thread's modules leave the API's schemas out", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-thread-imports-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const hooks = path.join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    "export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write('LOADED ' + r.url + '\\n'); return r; }\n",
  );
  const entry = fileURLToPath(new URL('../../../src/channels/email/delivery-threads.ts', import.meta.url));
  const script = `import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(hooks).href)}); await import(${JSON.stringify(pathToFileURL(entry).href)});`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr.slice(-2000));
  const loaded = r.stderr.split('\n').filter((l) => l.startsWith('LOADED '));
  t.ok(
    loaded.some((l) => l.includes('/src/channels/render.ts')),
    'the render entry is among what was loaded',
  );
  t.same(
    loaded.filter((l) => /\/node_modules\/zod\/|\/src\/contract\/[a-z-]*schemas\.ts/.test(l)),
    [],
    'no zod, no schema module of the contract',
  );
});
