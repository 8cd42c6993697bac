// The daemon of `npm run bench submission`, in a process of its own so the load generator does not
// share its event loop: a fresh SQLite data dir, workspace `bench` on the custom plan with a
// verified sending domain (inserted as the tests do: no DNS to confirm it here) and a test key,
// submission on with STARTTLS. Prints one line `{"msg":"ready",…}` with the ports and the key.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'postern-bench-submission-'));
const config = loadConfig({
  env: {
    POSTERN_DATA_DIR: dataDir,
    POSTERN_HTTP_PORT: '0',
    POSTERN_SMTP_PORT: '0',
    POSTERN_METRICS_PORT: '0',
    POSTERN_SMTP_HOST: '127.0.0.1',
    POSTERN_SUBMISSION_ENABLED: 'true',
    POSTERN_SUBMISSION_HOST: '127.0.0.1',
    POSTERN_SUBMISSION_PORT: '0',
    POSTERN_SUBMISSION_TLS_PORT: '0',
    POSTERN_RATE_LIMIT_SEND: '0',
    POSTERN_RATE_LIMIT_READ: '0',
    POSTERN_LOG_LEVEL: 'silent',
  },
});
const app = await createApp({ config });
const ws = await app.workspaces.create({ slug: 'bench', name: 'Bench', plan: 'custom' });
const { secret } = await app.keys.create(ws, { env: 'test' });
const { privateKey, publicKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const now = app.clock.now().toISOString();
await app.db
  .insertInto('domains')
  .values({
    id: app.ids.uuid(),
    workspace_id: ws.id,
    domain: 'bench.example.org',
    kind: 'custom',
    status: 'verified',
    dkim_selector: 'postern',
    dkim_private_key: app.box.seal(privateKey),
    dkim_public_key: publicKey,
    verified_at: now,
    dkim_verified_at: now,
    mx_verified_at: now,
    created_at: now,
    deleted_at: null,
  })
  .execute();
const ports = await app.start();
console.log(JSON.stringify({ msg: 'ready', http: ports.http, submission: ports.submission!.port, key: secret }));
const stop = () =>
  void app.stop().then(() => {
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
