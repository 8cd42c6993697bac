// `npm run mutate [module…]`: StrykerJS over the rule modules, one run per module, each against the
// few test files that exercise it, then one table of scores. Not part of `npm test` or CI (a full run
// takes a long while): run it when you touch one of these modules. It writes each module's row (with
// the date, the commit and the duration) into the "Last measured" table of docs/testing.md, keeping
// the rows of modules not run this time; the surviving mutants judged equivalent are listed there
// by hand. It exits 1 when a module run scores under GATE.
//
// Why per module: Stryker's tap runner runs whole test files, so a mutant is only as cheap as the
// files listed for its module. Daemon tests boot the daemon in this process through tsx and so run
// the mutated src; tests that spawn bin/postern.js run dist/ and would never see a mutant, and code
// on worker threads (delivery, analysis) does not see the active mutant either: none are listed.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Stryker } from '@stryker-mutator/core';

interface RuleModule {
  /** What `npm run mutate <name>` takes. */
  name: string;
  /** Files (or `file:from-to` line ranges) to mutate. */
  mutate: string[];
  /** Test files run against each mutant. */
  tests: string[];
  /**
   * Needs the test machine's PostgreSQL (docs/testing.md): its tests run their PostgreSQL legs,
   * on POSTERN_TEST_DATABASE_URL or the machine's `test` database.
   */
  postgres?: boolean;
}

/**
 * `file:from-to`, the lines from the one holding `first` to the one before the one holding `next`:
 * a part of a larger file found by its text, so that lines added above it do not move the range
 * onto other code.
 */
function span(file: string, first: string, next: string): string {
  const lines = readFileSync(file, 'utf8').split('\n');
  const from = lines.findIndex((l) => l.includes(first));
  const to = lines.findIndex((l, i) => i > from && l.includes(next));
  if (from < 0 || to < 0) throw new Error(`${file} no longer holds "${first}" … "${next}": update test/mutate.ts`);
  return `${file}:${from + 1}-${to}`;
}

const MODULES: RuleModule[] = [
  {
    name: 'scopes',
    mutate: ['src/workspaces/scopes.ts', 'src/http/auth.ts'],
    tests: ['test/workspaces/scopes.test.ts', 'test/http/auth.test.ts'],
  },
  {
    name: 'ledger',
    mutate: ['src/messages/transitions.ts', 'src/messages/ledger.ts'],
    tests: [
      'test/messages/transitions.test.ts',
      'test/messages/ledger-rules.test.ts',
      'test/messages/ledger-tails.test.ts',
      'test/messages/ledger.test.ts',
    ],
  },
  { name: 'cancel', mutate: ['src/outbound/cancel.ts'], tests: ['test/outbound/cancel.test.ts', 'test/outbound/cancel-race.test.ts'] },
  { name: 'accept', mutate: ['src/outbound/accept.ts'], tests: ['test/outbound/accept.test.ts', 'test/outbound/idempotency.test.ts'] },
  {
    name: 'routing',
    // The RCPT policy: the router, and the listener's RCPT TO handler that answers with its verdict.
    mutate: ['src/inbound/routing.ts', span('src/smtp/listener.ts', 'const destination = async (rcpt', '/** The Received header of')],
    tests: ['test/inbound/routing.test.ts', 'test/inbound/routing-edges.test.ts', 'test/smtp/protocol.test.ts'],
  },
  {
    name: 'ssrf',
    mutate: ['src/lib/ssrf.ts', 'src/webhooks/ssrf.ts'],
    tests: ['test/lib/ssrf.test.ts', 'test/lib/ssrf-rules.test.ts', 'test/webhooks/ssrf.test.ts'],
  },
  { name: 'signing', mutate: ['src/webhooks/signing.ts'], tests: ['test/webhooks/signing.test.ts'] },
  {
    name: 'classify',
    // judge() and categoryOf() decide for every SMTP failure whether it is permanent and whether
    // the address is suppressed; the bounce rules' tests are what exercise them.
    mutate: ['src/channels/email/classify.ts'],
    tests: ['test/channels/email/classify.test.ts', 'test/channels/email/bounce-rules.test.ts', 'test/channels/email/rules.test.ts'],
  },
  { name: 'bounce-rules', mutate: ['src/channels/email/bounce-rules.ts'], tests: ['test/channels/email/bounce-rules.test.ts'] },
  { name: 'retry', mutate: ['src/outbound/retry.ts'], tests: ['test/outbound/retry.test.ts', 'test/channels/email/retry-expiry.test.ts'] },
  {
    name: 'suppressions',
    mutate: ['src/suppressions/store.ts'],
    tests: [
      'test/suppressions/store.test.ts',
      'test/suppressions/at-send.test.ts',
      'test/suppressions/environments.test.ts',
      'test/suppressions/paging.test.ts',
    ],
  },
  {
    name: 'budgets',
    mutate: ['src/cluster/budgets.ts', 'src/http/rate-limit.ts'],
    // The shared stores are the module's point: PostgreSQL's bucket and Redis's windows.
    tests: [
      'test/http/rate-limit.test.ts',
      'test/cluster/budget-store.test.ts',
      'test/cluster/budget-redis.test.ts',
      'test/channels/email/rules.test.ts',
      'test/http/edge.test.ts',
    ],
    postgres: true,
  },
  {
    name: 'transport-security',
    mutate: ['src/channels/email/transport-security.ts'],
    tests: ['test/channels/email/transport-security-rules.test.ts', 'test/channels/email/transport-security.test.ts'],
  },
  {
    name: 'srs',
    mutate: ['src/forwarding/srs.ts'],
    tests: ['test/forwarding/srs.test.ts', 'test/forwarding/forwarding.test.ts', 'test/forwarding/bounces.test.ts'],
  },
  {
    name: 'tokens',
    mutate: ['src/channels/email/tracking/tokens.ts'],
    tests: ['test/channels/email/tokens.test.ts', 'test/channels/email/rules.test.ts'],
  },
  {
    name: 'session',
    mutate: ['src/http/dashboard/session.ts'],
    tests: ['test/http/dashboard/session-rules.test.ts', 'test/http/dashboard/session.test.ts'],
  },
  { name: 'send-input', mutate: ['src/outbound/send-input.ts'], tests: ['test/outbound/send-input.test.ts'] },
  {
    name: 'second-factor',
    mutate: ['src/lib/totp.ts', 'src/workspaces/second-factor.ts'],
    tests: ['test/lib/totp.test.ts', 'test/http/dashboard/second-factor.test.ts'],
  },
];

/** The score every rule module must reach (docs/testing.md). */
const GATE = 85;
const DOC = 'docs/testing.md';
const START = '<!-- npm run mutate writes this table -->';
const END = '<!-- end of the table npm run mutate writes -->';

interface Row {
  module: string;
  mutants: number;
  killed: number;
  survived: number;
  noCoverage: number;
  timeout: number;
  errors: number;
  score: number;
  seconds: number;
}

async function runModule(m: RuleModule): Promise<Row> {
  const started = Date.now();
  const options = {
    testRunner: 'tap',
    plugins: ['@stryker-mutator/tap-runner'],
    tap: { testFiles: m.tests, nodeArgs: ['--import', 'tsx', '{{testFile}}'], forceBail: true },
    mutate: m.mutate,
    coverageAnalysis: 'perTest',
    concurrency: 2,
    timeoutMS: 30_000,
    tempDirName: '.stryker-tmp',
    ignorePatterns: ['/data', '/coverage', '/.tap', '/bench', '/reports'],
    reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
    htmlReporter: { fileName: `reports/mutation/${m.name}.html` },
    jsonReporter: { fileName: `reports/mutation/${m.name}.json` },
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: false },
    logLevel: 'warn',
    cleanTempDir: 'always',
    // A rerun only runs the mutants whose source or covering tests changed since the last one.
    incremental: true,
    incrementalFile: `reports/mutation/${m.name}.incremental.json`,
  };
  // Each test file runs as `node file` under Stryker, where tap's own default of 30 s per file
  // applies (npm test gives 600): on a loaded machine a daemon test can need more.
  process.env.TAP_TIMEOUT ??= '600';
  const databaseUrl = process.env.POSTERN_TEST_DATABASE_URL;
  if (m.postgres) process.env.POSTERN_TEST_DATABASE_URL ||= 'postgres://postgres@127.0.0.1:5432/test';
  else delete process.env.POSTERN_TEST_DATABASE_URL;
  // Stryker types logLevel as its own enum; 'warn' is that enum's value.
  const results = await new Stryker(options as ConstructorParameters<typeof Stryker>[0]).runMutationTest().finally(() => {
    if (databaseUrl === undefined) delete process.env.POSTERN_TEST_DATABASE_URL;
    else process.env.POSTERN_TEST_DATABASE_URL = databaseUrl;
  });
  const count = (...statuses: string[]) => results.filter((r) => statuses.includes(r.status)).length;
  const killed = count('Killed');
  const timeout = count('Timeout');
  const survived = count('Survived');
  const noCoverage = count('NoCoverage');
  const errors = count('CompileError', 'RuntimeError');
  const valid = killed + timeout + survived + noCoverage;
  return {
    module: m.name,
    mutants: valid,
    killed,
    survived,
    noCoverage,
    timeout,
    errors,
    score: valid === 0 ? 0 : (100 * (killed + timeout)) / valid,
    seconds: Math.round((Date.now() - started) / 1000),
  };
}

function table(rows: Row[]): string {
  const head = ['module', 'mutants', 'killed', 'survived', 'no coverage', 'timeout', 'errors', 'score %', 'time s'];
  const body = rows.map((r) => [
    r.module,
    r.mutants,
    r.killed,
    r.survived,
    r.noCoverage,
    r.timeout,
    r.errors,
    r.score.toFixed(1),
    r.seconds,
  ]);
  const cells = [head, ...body].map((row) => row.map(String));
  const widths = head.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  const line = (row: string[]) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !MODULES.some((m) => m.name === w));
if (unknown.length > 0) {
  console.error(`unknown module ${unknown.join(', ')}; modules are ${MODULES.map((m) => m.name).join(', ')}`);
  process.exit(2);
}
mkdirSync('reports/mutation', { recursive: true });
const rows: Row[] = [];
for (const m of wanted.length > 0 ? wanted.map((w) => MODULES.find((x) => x.name === w)!) : MODULES) {
  console.log(`\n== ${m.name}: ${m.mutate.join(', ')} against ${m.tests.join(', ')}`);
  rows.push(await runModule(m));
}
console.log(`\nMutation score per rule module (score = killed + timeout over mutants; reports/mutation/<module>.html)\n`);
console.log(table(rows));
writeDocTable(rows);
const under = rows.filter((r) => r.score < GATE);
if (under.length > 0) console.error(`\nunder the ${GATE} % gate: ${under.map((r) => `${r.module} ${r.score.toFixed(1)} %`).join(', ')}`);
process.exitCode = under.length > 0 ? 1 : 0;

/** Rewrites the measured table in docs/testing.md: this run's rows replace those modules' rows, the others stay. */
function writeDocTable(run: Row[]): void {
  const doc = readFileSync(DOC, 'utf8');
  const from = doc.indexOf(START);
  const to = doc.indexOf(END);
  if (from < 0 || to < from) throw new Error(`${DOC} has no table markers (${START} … ${END})`);
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'test'], { encoding: 'utf8' }).trim() !== '';
  const date = new Date().toISOString().slice(0, 10);
  const kept = new Map<string, string>();
  for (const line of doc.slice(from, to).split('\n')) {
    const m = /^\| `([^`]+)`/.exec(line);
    if (m) kept.set(m[1], line);
  }
  const minutes = (s: number) => (s < 60 ? `${s} s` : `${(s / 60).toFixed(1)} min`);
  for (const r of run) {
    kept.set(
      r.module,
      `| \`${r.module}\` | ${r.mutants} | ${r.killed} | ${r.survived} | ${r.noCoverage} | ${r.timeout} | ${r.score.toFixed(1)} % | ${minutes(r.seconds)} | ${date} | \`${commit}\`${dirty ? ' + changes' : ''} |`,
    );
  }
  const order = MODULES.map((m) => m.name);
  const lines = [...kept].sort(([a], [b]) => order.indexOf(a) - order.indexOf(b)).map(([, line]) => line);
  const block = [
    START,
    '',
    '| Module | Mutants | Killed | Survived | No coverage | Timeout | Score | Time | Measured | Commit |',
    '| --- | --: | --: | --: | --: | --: | --: | --: | --- | --- |',
    ...lines,
    '',
  ].join('\n');
  writeFileSync(DOC, doc.slice(0, from) + block + doc.slice(to));
  execFileSync('npx', ['prettier', '--write', DOC], { stdio: 'ignore' }); // the doc stays as lint wants it
}
