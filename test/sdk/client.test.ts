// Our own SDK (sdk/, `@postern/client`): its types are what the server describes (schema.ts is
// exactly what `npm run sdk:generate` writes from this checkout's API description), the package
// packs as it would be published (npm pack: built, only dist/), and the packed package, installed
// beside the tests, talks to a daemon started here as a client would: sends, reads, filters
// (metadata as the server's deepObject), pages, idempotency keys and the error envelope.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import { generateSchema, SCHEMA_FILE } from '../../sdk/generate.js';
import type * as Sdk from '../../sdk/src/index.js';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const sdkDir = path.join(root, 'sdk');

t.test('schema.ts is what the server describes', async (t) => {
  // A failure here: the API changed and `npm run sdk:generate` was not run (commit its output).
  t.ok((await generateSchema()) === readFileSync(SCHEMA_FILE, 'utf8'), 'sdk/src/schema.ts equals a fresh generation');
  const version = (dir: string) => (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  t.equal(version(sdkDir), version(root), 'the SDK is versioned with the server');
});

/** Packs sdk/ (npm pack: prepack builds it) and unpacks it under .tap/, whence openapi-fetch resolves. */
function installPacked(t: { teardown(fn: () => unknown): void }): string {
  const packs = mkdtempSync(path.join(tmpdir(), 'postern-sdk-'));
  const into = path.join(root, '.tap', `sdk-${process.pid}`, 'node_modules', '@postern', 'client');
  t.teardown(() => {
    rmSync(packs, { recursive: true, force: true });
    rmSync(path.join(root, '.tap', `sdk-${process.pid}`), { recursive: true, force: true });
  });
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', packs], { cwd: sdkDir, encoding: 'utf8' });
  const [{ filename, files }] = JSON.parse(out.slice(out.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  const paths = files.map((f) => f.path).sort();
  if (paths.join() !== ['README.md', 'dist/index.d.ts', 'dist/index.js', 'dist/schema.d.ts', 'dist/schema.js', 'package.json'].join())
    throw new Error(`the package holds ${paths.join(', ')}`);
  mkdirSync(into, { recursive: true });
  execFileSync('tar', ['-xzf', path.join(packs, filename), '-C', into, '--strip-components=1']);
  return into;
}

for (const db of testDatabases()) {
  t.test(`the packed SDK against a daemon on ${db}`, async (t) => {
    const installed = installPacked(t);
    // Typed by the source, run from the package as a user installs it.
    const sdk = (await import(pathToFileURL(path.join(installed, 'dist/index.js')).href)) as typeof Sdk;
    const d = await bootDaemon(t, { db });
    const ws = await d.workspace('sdk');
    const postern = sdk.createPostern({ baseUrl: `${d.url}/`, apiKey: ws.test });

    const sent = await postern.POST('/v1/send-raw', {
      body: { channel: 'email', to: 'ann@example.com', content: { subject: 'Hello', text: 'It works.' }, metadata: { order: 'o-1' } },
      headers: { 'Idempotency-Key': 'order-o-1' },
    });
    t.equal(sent.response.status, 202);
    t.match(sent.data, { id: /^msg_/, status: 'queued', livemode: false });
    const id = sent.data!.id;

    const again = await postern.POST('/v1/send-raw', {
      body: { channel: 'email', to: 'bob@example.com', content: { subject: 'Other', text: 'Other.' } },
      headers: { 'Idempotency-Key': 'order-o-1' },
    });
    t.equal(again.data?.id, id, 'a repeated Idempotency-Key answers the first message');

    const read = await postern.GET('/v1/messages/{id}', { params: { path: { id } } });
    t.match(read.data, { publicId: id, recipient: 'ann@example.com', channel: 'email', metadata: { order: 'o-1' } });

    await postern.POST('/v1/send-raw', { body: { channel: 'email', to: 'cy@example.com', content: { subject: 'Hi', text: 'Hi.' } } });
    const filtered = await postern.GET('/v1/messages', { params: { query: { metadata: { order: 'o-1' } } } });
    t.same(
      filtered.data?.data.map((m) => m.publicId),
      [id],
      'a metadata filter, serialised by the client as the server reads it',
    );
    const first = await postern.GET('/v1/messages', { params: { query: { limit: 1 } } });
    t.equal(first.data?.data.length, 1);
    t.ok(first.data?.nextCursor, 'a page with a cursor');
    const second = await postern.GET('/v1/messages', { params: { query: { limit: 1, cursor: first.data!.nextCursor! } } });
    t.not(second.data?.data[0]?.publicId, first.data?.data[0]?.publicId, 'the next page');

    const invalid = await postern.POST('/v1/send-raw', {
      body: { channel: 'email', to: 'not an address', content: { subject: 'x', text: 'x' } },
    });
    t.equal(invalid.data, undefined);
    t.match(invalid.error, { error: { code: 'invalid_body', issues: [{ path: 'to' }] } }, 'a refusal is the error envelope, typed');

    const missing = await postern.GET('/v1/messages/{id}', { params: { path: { id: 'msg_doesnotexist' } } });
    t.equal(missing.response.status, 404);
    t.equal(missing.error?.error.code, 'not_found');

    const stranger = sdk.createPostern({ baseUrl: d.url, apiKey: 'sk_test_wrong' });
    const refused = await stranger.GET('/v1/messages', {});
    t.equal(refused.response.status, 401);
    t.equal(refused.error?.error.code, 'unauthorized');
  });
}
