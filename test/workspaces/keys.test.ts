// When a key was last used: written on a request that misses the auth cache, at most once a minute.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`a key records when it was last used, to the minute (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    const ws = await daemon.workspace('acme');
    const listed = async () => (await daemon.cli('key', 'list', '--workspace', 'acme')).json.find((k: any) => ws.live.startsWith(k.prefix));
    t.equal((await listed()).lastUsedAt, null, 'never used');
    const first = daemon.clock.now().toISOString();
    t.equal((await daemon.request('GET', '/v1/context', { key: ws.live })).status, 200);
    await t.resolveMatch(
      waitFor(async () => (await listed()).lastUsedAt === first),
      true,
      'the first use is recorded',
    );

    daemon.clock.advance(30_000);
    await daemon.request('GET', '/v1/context', { key: ws.live });
    t.equal((await listed()).lastUsedAt, first, 'not rewritten within the minute');
    daemon.clock.advance(31_000);
    await daemon.request('GET', '/v1/context', { key: ws.live });
    const later = daemon.clock.now().toISOString();
    await t.resolveMatch(
      waitFor(async () => (await listed()).lastUsedAt === later),
      true,
      'a minute later it moves on',
    );
  });
}

async function waitFor(check: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}
