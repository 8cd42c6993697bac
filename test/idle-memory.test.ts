// What an idle daemon loads on its event loop (lib/lazy.ts): a daemon on SQLite with no webhook
// endpoint, no relay, no Redis and no forwarding keeps mailauth, mailparser, undici, pg, ioredis,
// rate-limiter-flexible, web-push and nodemailer out of its heap until something needs them.
// Before, each was imported at boot: 981 CommonJS modules against 347, and 117 MB resident when
// settled against 92 (docs/performance.md).
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { sqliteOnly } from './helpers/databases.js';

sqliteOnly('counts what an idle daemon on SQLite loads; on PostgreSQL the pg driver is needed at boot by design');

const LAZY = ['mailauth', 'mailparser', 'undici', 'pg', 'ioredis', 'rate-limiter-flexible', 'web-push', 'nodemailer'];

const loaded = () => {
  const cache = createRequire(import.meta.url).cache;
  return new Set(
    Object.keys(cache)
      .map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1])
      .filter((name): name is string => !!name),
  );
};

t.test('an idle daemon has not loaded what it does not use', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'postern-idle-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = loadConfig({
    env: {
      POSTERN_DATA_DIR: dir,
      POSTERN_HTTP_PORT: '0',
      POSTERN_SMTP_PORT: '0',
      POSTERN_METRICS_PORT: '0',
      POSTERN_SMTP_HOST: '127.0.0.1',
      POSTERN_HTTP_HOST: '127.0.0.1',
      POSTERN_LOG_LEVEL: 'silent',
    },
  });
  const app = await createApp({ config });
  const ws = await app.workspaces.create({ slug: 'idle', name: 'Idle' });
  const { secret } = await app.keys.create(ws, { env: 'test' });
  const ports = await app.start();
  t.teardown(() => app.stop());

  // It answers and accepts a send (test mode: nothing leaves the machine).
  const res = await fetch(`http://127.0.0.1:${ports.http}/v1/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: 'someone@example.com', channel: 'email', content: { subject: 'Hi', text: 'Hello' } }),
  });
  t.equal(res.status, 202);

  const present = loaded();
  t.ok(present.has('better-sqlite3'), 'the check sees what the daemon did load');
  for (const name of LAZY) t.notOk(present.has(name), `${name} is not loaded`);
});
