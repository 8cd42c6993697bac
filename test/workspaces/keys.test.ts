// When a key was last used: written on a request that misses the auth cache, at most once a minute.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';
import { until } from '../helpers/until.js';

for (const db of testDatabases()) {
  t.test(`a key records when it was last used, to the minute (${db})`, async (t) => {
    const daemon = await bootDaemon(t, { db });
    const ws = await daemon.workspace('acme');
    const listedKey = async (key: string) =>
      (await daemon.cli('key', 'list', '--workspace', 'acme')).json.find((k: any) => key.startsWith(k.prefix));
    const listed = () => listedKey(ws.live);
    t.equal((await listed()).lastUsedAt, null, 'never used');
    const first = daemon.clock.now().toISOString();
    t.equal((await daemon.request('GET', '/v1/context', { key: ws.live })).status, 200);
    t.ok(await until('the first use to be recorded', async () => (await listed()).lastUsedAt === first), 'the first use is recorded');

    daemon.clock.advance(30_000);
    await daemon.request('GET', '/v1/context', { key: ws.live });
    // The write is not awaited by the request: before saying there was none, wait for a witness, the
    // other key's first use, written after any write the request above made.
    const witness = daemon.clock.now().toISOString();
    await daemon.request('GET', '/v1/context', { key: ws.test });
    await until("the witness's first use to be recorded", async () => (await listedKey(ws.test)).lastUsedAt === witness);
    t.equal((await listed()).lastUsedAt, first, 'not rewritten within the minute');
    daemon.clock.advance(31_000);
    await daemon.request('GET', '/v1/context', { key: ws.live });
    const later = daemon.clock.now().toISOString();
    t.ok(await until('lastUsedAt to move on', async () => (await listed()).lastUsedAt === later), 'a minute later it moves on');
  });
}
