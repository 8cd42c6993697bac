// `postern domain …`: claim, list, verify and delete from the command line.
import t from 'tap';
import { setup } from '../helpers/inbound.js';
import { testDatabases } from '../helpers/databases.js';

for (const db of testDatabases()) {
  t.test(`domain commands (${db})`, async (t) => {
    const env = await setup(t, { db });
    const { d } = env;
    const add = await d.cli('domain', 'add', '--workspace', 'acme', '--domain', 'cli.example.com');
    t.equal(add.code, 0, add.stderr);
    t.match(add.json, { domain: 'cli.example.com', kind: 'custom', status: 'pending' });
    t.equal(add.json.records.length, 2);
    const dup = await d.cli('domain', 'add', '--workspace', 'acme', '--domain', 'cli.example.com');
    t.equal(dup.code, 1);
    t.match(JSON.parse(dup.stderr).error.code, 'already_exists');

    env.dns.set('cli.example.com', [{ type: 'MX', data: { preference: 10, exchange: 'mx.postern.test' } }]);
    env.dns.set('postern._domainkey.cli.example.com', [{ type: 'TXT', data: add.json.records[1].value }]);
    const verify = await d.cli('domain', 'verify', add.json.id, '--workspace', 'acme');
    t.equal(verify.json.status, 'verified');
    const list = await d.cli('domain', 'list', '--workspace', 'acme');
    t.same(
      list.json.map((x: any) => x.domain),
      ['cli.example.com'],
    );
    const del = await d.cli('domain', 'delete', add.json.id, '--workspace', 'acme');
    t.same(del.json, { id: add.json.id, deleted: true });
    t.equal((await d.cli('domain', 'verify', '--workspace', 'acme')).code, 2);
  });
}
