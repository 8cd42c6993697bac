// `postern workspace …` and `postern key …`.
import t from 'tap';
import { bootDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`key create --scopes with no scope is a usage error, not an unscoped key (${db})`, async (t) => {
    const d = await bootDaemon(t, { db });
    await d.workspace('acme');
    const before = (await d.cli('key', 'list', '--workspace', 'acme')).json.length;
    for (const scopes of [['--scopes', ''], ['--scopes='], ['--scopes', ' , ']]) {
      const r = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', ...scopes);
      t.equal(r.code, 2, JSON.stringify(scopes));
      t.match(r.stderr, /--scopes names no scope/);
      t.equal(r.stdout, '');
    }
    t.equal((await d.cli('key', 'list', '--workspace', 'acme')).json.length, before, 'no key was created');
    const scoped = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live', '--scopes', 'read');
    t.same(scoped.json.scopes, ['read']);
    const unscoped = await d.cli('key', 'create', '--workspace', 'acme', '--env', 'live');
    t.equal(unscoped.json.scopes, null, 'without --scopes a key is unscoped, as before');
  });
}
