// Every test file that boots a daemon runs it on both databases, or says why not (issue 34).
// The scan reads every test/**/*.test.ts: a file that boots a daemon (directly or through any
// helper in test/helpers/ that does: the helpers are read too, so a new one is found without
// editing this list) must loop over `testDatabases()`, use PostgreSQL itself (`freshPostgres()`,
// `startCluster()`, `startPrivatePostgres()`, POSTERN_TEST_DATABASE_URL), or call
// `sqliteOnly('why')`, which prints the PostgreSQL leg as a skipped test with that reason.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TEST_DIR = path.join(ROOT, 'test');

/**
 * Files that boot a daemon on SQLite only because nobody has converted them yet: debt, not a
 * reason. Each is reported below as a todo; remove a file from the list when it is converted
 * (the scan fails while a listed file no longer needs to be here).
 */
const NOT_YET_CONVERTED: string[] = [];

/** What boots a daemon without going through a helper: the app itself, or the binary's `serve`. */
const PRIMITIVES = ['createApp', 'spawnDaemon'];
const SERVE_BIN = /\brunBin\(\s*\[\s*['"]serve['"]/;

/** Calling any of these means the file's daemons see PostgreSQL. */
const PG_AWARE = /\btestDatabases\(\)|\bfreshPostgres\(|\bstartCluster\(|\bstartPrivatePostgres\(|POSTERN_TEST_DATABASE_URL/;
const SQLITE_ONLY = /\bsqliteOnly\(\s*(['"`])((?:(?!\1)[^\\]|\\.)*)\1\s*,?\s*\)/;
/** A reason that only says "later" is not a reason. */
const NOT_A_REASON = /^\s*(todo|later|not (yet )?converted|tbd|fixme)\b/i;

/** Source without comments, so a comment that names a helper neither boots nor excuses. */
function code(src: string): string {
  // Line comments first: a line comment may hold a glob such as `fixtures/*.eml`.
  return src.replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1').replace(/\/\*[^]*?\*\//g, '');
}

function walk(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).map((f) => path.join(dir, f));
}

/** The helpers' exported functions that boot a daemon, found by reading their bodies to a fixpoint. */
function bootHelpers(helpers: string): Map<string, string> {
  const chunks: { name: string; file: string; body: string }[] = [];
  for (const file of walk(helpers).filter((f) => f.endsWith('.ts'))) {
    const src = code(readFileSync(file, 'utf8'));
    const starts = [...src.matchAll(/^export (?:async )?function (\w+)/gm)];
    starts.forEach((m, i) => {
      chunks.push({ name: m[1], file: path.basename(file, '.ts'), body: src.slice(m.index, starts[i + 1]?.index ?? src.length) });
    });
  }
  const booters = new Map<string, string>();
  let grew = true;
  while (grew) {
    grew = false;
    const known = [...PRIMITIVES, ...booters.keys()];
    for (const c of chunks) {
      if (booters.has(c.name)) continue;
      const calls = known.some((k) => k !== c.name && new RegExp(`\\b${k}\\(`).test(c.body)) || SERVE_BIN.test(c.body);
      // spawnDaemon is the primitive that spawns `postern serve`; it is a booter in its own right.
      if (calls || PRIMITIVES.includes(c.name)) {
        booters.set(c.name, c.file);
        grew = true;
      }
    }
  }
  return booters;
}

interface Finding {
  file: string;
  boots: string[];
  pg: boolean;
  reason: string | null;
}

/** Every test file under `root` (its helpers in `root/helpers`) that boots a daemon. */
function scan(root: string): Finding[] {
  const helpers = path.join(root, 'helpers');
  const booters = bootHelpers(helpers);
  const findings: Finding[] = [];
  // This file is left out: its fixtures name every helper.
  const self = fileURLToPath(import.meta.url);
  for (const file of walk(root).filter((f) => f.endsWith('.test.ts') && !f.startsWith(helpers) && f !== self)) {
    const src = code(readFileSync(file, 'utf8'));
    // The names this file imports from the helpers (a local `setup` is not the inbound one).
    const imported = new Set<string>();
    const imports = /(?:import\s*\{([^}]*)\}\s*from\s*|const\s*\{([^}]*)\}\s*=\s*await import\()['"][./]*helpers\/([\w-]+)\.js['"]/g;
    for (const m of src.matchAll(imports)) {
      for (const name of (m[1] ?? m[2]).split(',').map((s) => s.trim().split(/\s+as\s+|\s*:\s*/)[0])) {
        if (booters.get(name) === m[3]) imported.add(name);
      }
    }
    const boots = [...imported].filter((n) => new RegExp(`(^|[^\\w.])${n}\\(`).test(src));
    if (/\bcreateApp\(/.test(src)) boots.push('createApp');
    if (SERVE_BIN.test(src)) boots.push("runBin(['serve'])");
    if (boots.length === 0) continue;
    const marker = SQLITE_ONLY.exec(src);
    findings.push({ file: path.relative(path.dirname(root), file), boots, pg: PG_AWARE.test(src), reason: marker ? marker[2] : null });
  }
  return findings.sort((a, b) => a.file.localeCompare(b.file));
}

/** What is wrong with the findings: files with no leg and no reason, empty reasons, stale debt. */
function judge(findings: Finding[], notYet: string[]) {
  return {
    offending: findings.filter((f) => !f.pg && f.reason === null && !notYet.includes(f.file)),
    noReason: findings.filter((f) => f.reason !== null && (!f.reason.trim() || NOT_A_REASON.test(f.reason))),
    stale: notYet.filter((file) => !findings.some((f) => f.file === file && !f.pg && f.reason === null)),
  };
}

t.test('the helpers that boot a daemon are all found', async (t) => {
  const found = bootHelpers(path.join(TEST_DIR, 'helpers'));
  for (const name of ['bootDaemon', 'spawnDaemon', 'setup', 'spawnDaemonIn', 'spawnDaemonTrusting', 'startCluster']) {
    t.ok(found.has(name), `${name} boots a daemon`);
  }
  t.notOk(found.has('createAddress') || found.has('freshPostgres'), 'helpers that boot nothing are not counted');
});

t.test('the scan tells each kind of file apart', async (t) => {
  const boot = "import { bootDaemon } from '../helpers/daemon.js';\n";
  const root = path.join(
    t.testdir({
      test: {
        helpers: {
          'daemon.ts': 'export async function bootDaemon() {\n  return createApp();\n}\nexport function quiet() {}\n',
          'inbound.ts':
            "import { bootDaemon } from './daemon.js';\nexport async function setup() {\n  return bootDaemon();\n}\nexport function createAddress() {}\n",
        },
        'both.test.ts': `${boot}for (const db of testDatabases()) bootDaemon(t, { db });\n`,
        'bare.test.ts': `${boot}bootDaemon(t);\n`,
        'via-setup.test.ts': "import { setup } from '../helpers/inbound.js';\nawait setup(t);\n",
        'dynamic.test.ts': "const { bootDaemon } = await import('../helpers/daemon.js');\nawait bootDaemon(t);\n",
        'serve.test.ts': "await runBin(['serve'], {});\n",
        'reason.test.ts': `${boot}sqliteOnly(\n  'copies the SQLite file',\n);\nbootDaemon(t);\n`,
        'empty.test.ts': `${boot}sqliteOnly(' ');\nbootDaemon(t);\n`,
        'later.test.ts': `${boot}sqliteOnly('not converted yet');\nbootDaemon(t);\n`,
        'debt.test.ts': `${boot}bootDaemon(t);\n`,
        'local-setup.test.ts': 'async function setup() {}\nawait setup(t);\n',
        'comment.test.ts': `// bootDaemon(t) is not called here\nimport { quiet } from '../helpers/daemon.js';\nquiet();\n`,
        'commented-excuse.test.ts': `${boot}// testDatabases() would go here\nbootDaemon(t);\n`,
      },
    }),
    'test',
  );
  const findings = scan(root);
  const verdict = judge(findings, ['test/debt.test.ts', 'test/both.test.ts']);
  t.same(findings.map((f) => f.file).sort(), [
    'test/bare.test.ts',
    'test/both.test.ts',
    'test/commented-excuse.test.ts',
    'test/debt.test.ts',
    'test/dynamic.test.ts',
    'test/empty.test.ts',
    'test/later.test.ts',
    'test/reason.test.ts',
    'test/serve.test.ts',
    'test/via-setup.test.ts',
  ]);
  t.same(
    verdict.offending.map((f) => f.file),
    ['test/bare.test.ts', 'test/commented-excuse.test.ts', 'test/dynamic.test.ts', 'test/serve.test.ts', 'test/via-setup.test.ts'],
  );
  t.same(
    verdict.noReason.map((f) => f.file),
    ['test/empty.test.ts', 'test/later.test.ts'],
  );
  t.same(verdict.stale, ['test/both.test.ts'], 'a converted file left on the debt list is stale');
});

t.test('every file that boots a daemon runs it on PostgreSQL too, or says why not', async (t) => {
  const findings = scan(TEST_DIR);
  t.ok(findings.length > 50, `the scan sees the daemon tests (${findings.length} files)`);
  const { offending, noReason, stale } = judge(findings, NOT_YET_CONVERTED);
  const only = findings.filter((f) => !f.pg && f.reason !== null);
  t.comment(`${findings.length} files boot a daemon: ${findings.filter((f) => f.pg).length} reach PostgreSQL, ${only.length} SQLite only`);
  for (const f of only) t.comment(`  SQLite only: ${f.file}: ${f.reason!.replace(/\s+/g, ' ')}`);
  t.same(
    offending.map((f) => `${f.file} (boots with ${f.boots.join(', ')})`),
    [],
    'these files boot a daemon but neither loop over testDatabases() nor call sqliteOnly(reason): wrap their tests in ' +
      '`for (const db of testDatabases())` and pass `{ db }`, or give the reason they cannot run on PostgreSQL',
  );
  t.same(
    noReason.map((f) => f.file),
    [],
    'sqliteOnly() needs a reason the file cannot run on PostgreSQL, not a promise to convert it later (that is NOT_YET_CONVERTED)',
  );
  t.same(stale, [], 'converted (or gone): remove these from NOT_YET_CONVERTED');
  for (const file of NOT_YET_CONVERTED)
    t.test(`the PostgreSQL leg of ${file}`, { todo: 'not converted yet (NOT_YET_CONVERTED)' }, async () => {});
});
