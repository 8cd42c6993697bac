// `--help` and `-h` on every command of the registry, and a group word alone: usage text, exit 0,
// and nothing loaded, created or opened.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { COMMANDS, main } from '../../src/cli.js';
import { runBin } from '../helpers/run-bin.js';

async function cli(argv: string[], env: Record<string, string>) {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, env, { out: (s) => (stdout += s), err: (s) => (stderr += s) });
  return { code, stdout, stderr };
}

const groups = [...new Set(COMMANDS.filter((c) => c.name.includes(' ')).map((c) => c.name.split(' ')[0]))];

t.test('every command answers --help and -h with its usage, without loading the configuration', async (t) => {
  t.ok(COMMANDS.some((c) => c.name === 'serve') && COMMANDS.some((c) => c.name === 'migrate'), 'serve and migrate are in the registry');
  const dir = t.testdir({});
  // An invalid setting: loading the configuration would exit 2 naming it.
  const env = { POSTERN_DATA_DIR: path.join(dir, 'data'), POSTERN_HTTP_PORT: 'none', POSTERN_SMTP_PORT: '0' };
  for (const c of COMMANDS) {
    const words = c.name.split(' ');
    for (const argv of [
      [...words, '--help'],
      [...words, '-h'],
      ['help', ...words],
      ['--help', ...words],
    ]) {
      const r = await cli(argv, env);
      const what = argv.join(' ');
      t.equal(r.code, 0, what);
      t.match(r.stdout, `Usage: postern ${c.name}`, what);
      t.match(r.stdout, c.summary, what);
      t.equal(r.stderr, '', what);
    }
  }
  t.same(readdirSync(dir), [], 'no data directory, database or key was created');
});

t.test('a group word alone lists its commands (exit 2; with --help, exit 0)', async (t) => {
  t.ok(groups.includes('workspace') && groups.includes('key'));
  const dir = t.testdir({});
  const env = { POSTERN_DATA_DIR: path.join(dir, 'data') };
  for (const group of groups) {
    const members = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
    const bare = await cli([group], env);
    t.equal(bare.code, 2, group);
    for (const m of members) t.match(bare.stdout, `postern ${m.name}`, `${group} lists ${m.name}`);
    for (const argv of [
      [group, '--help'],
      [group, '-h'],
      ['help', group],
    ]) {
      const r = await cli(argv, env);
      t.equal(r.code, 0, argv.join(' '));
      t.equal(r.stdout, bare.stdout, argv.join(' '));
    }
    const unknown = await cli([group, 'frobnicate'], env);
    t.equal(unknown.code, 2);
    t.match(unknown.stderr, `unknown command ${group} frobnicate`);
    t.match(unknown.stderr, `postern ${members[0].name}`, 'the group is listed with the error');
  }
  t.equal((await cli(['help', 'frobnicate'], env)).code, 2);
  t.same(readdirSync(dir), [], 'nothing was created');
});

t.test('--config without a file name is a usage error', async (t) => {
  const dir = t.testdir({});
  const env = { POSTERN_DATA_DIR: path.join(dir, 'data') };
  for (const argv of [
    ['workspace', 'list', '--config'],
    ['workspace', 'list', '--config='],
    ['--config', '--help'],
  ]) {
    const r = await cli(argv, env);
    t.equal(r.code, 2, argv.join(' '));
    t.match(r.stderr, /--config needs a file name/);
  }
  t.same(readdirSync(dir), []);
});

t.test('the binary: serve --help and migrate --help start nothing and create nothing', async (t) => {
  const cwd = t.testdir({});
  // Only the defaults: a daemon started by mistake would listen on 8025 and create ./data.
  for (const argv of [['serve', '--help'], ['serve', '-h'], ['migrate', '--help'], ['workspace', 'list', '--help'], ['key']]) {
    const r = await runBin(argv, { cwd, timeoutMs: 30_000 });
    t.equal(r.code, argv.length === 1 ? 2 : 0, argv.join(' '));
    t.match(r.stdout, /Usage: postern/);
  }
  t.notOk(existsSync(path.join(cwd, 'data')), 'no ./data');
  t.same(readdirSync(cwd), []);
});
