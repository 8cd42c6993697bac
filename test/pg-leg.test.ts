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
const HELPERS = path.join(TEST_DIR, 'helpers');

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
const SQLITE_ONLY = /\bsqliteOnly\(\s*(['"`])([^]*?)\1\s*\)/;
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
function bootHelpers(): Map<string, string> {
  const chunks: { name: string; file: string; body: string }[] = [];
  for (const file of walk(HELPERS).filter((f) => f.endsWith('.ts'))) {
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

function scan(): Finding[] {
  const booters = bootHelpers();
  const findings: Finding[] = [];
  for (const file of walk(TEST_DIR).filter((f) => f.endsWith('.test.ts') && !f.startsWith(HELPERS))) {
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
    findings.push({ file: path.relative(ROOT, file), boots, pg: PG_AWARE.test(src), reason: marker ? marker[2] : null });
  }
  return findings.sort((a, b) => a.file.localeCompare(b.file));
}

t.test('the helpers that boot a daemon are all found', async (t) => {
  const found = bootHelpers();
  for (const name of ['bootDaemon', 'spawnDaemon', 'setup', 'spawnDaemonIn', 'spawnDaemonTrusting', 'startCluster']) {
    t.ok(found.has(name), `${name} boots a daemon`);
  }
  t.notOk(found.has('createAddress') || found.has('freshPostgres'), 'helpers that boot nothing are not counted');
});

t.test('every file that boots a daemon runs it on PostgreSQL too, or says why not', async (t) => {
  const findings = scan();
  t.ok(findings.length > 50, `the scan sees the daemon tests (${findings.length} files)`);
  const offending = findings.filter((f) => !f.pg && f.reason === null && !NOT_YET_CONVERTED.includes(f.file));
  t.same(
    offending.map((f) => `${f.file} (boots with ${f.boots.join(', ')})`),
    [],
    'these files boot a daemon but neither loop over testDatabases() nor call sqliteOnly(reason): wrap their tests in ' +
      '`for (const db of testDatabases())` and pass `{ db }`, or give the reason they cannot run on PostgreSQL',
  );
  const empty = findings.filter((f) => f.reason !== null && (!f.reason.trim() || NOT_A_REASON.test(f.reason)));
  t.same(
    empty.map((f) => f.file),
    [],
    'sqliteOnly() needs a reason the file cannot run on PostgreSQL, not a promise to convert it later (that is NOT_YET_CONVERTED)',
  );
  const stale = NOT_YET_CONVERTED.filter((file) => !findings.some((f) => f.file === file && !f.pg && f.reason === null));
  t.same(stale, [], 'converted (or gone): remove these from NOT_YET_CONVERTED');
  for (const file of NOT_YET_CONVERTED)
    t.test(`the PostgreSQL leg of ${file}`, { todo: 'not converted yet (NOT_YET_CONVERTED)' }, async () => {});
});
