// `npm run mutate [module…]`: StrykerJS over the rule modules, one run per module, each against the
// few test files that exercise it, then one table of scores. Not part of `npm test` or CI (a full run
// takes a long while): run it when you touch one of these modules. docs/testing.md has the last
// measured table and the surviving mutants judged equivalent.
//
// Why per module: Stryker's tap runner runs whole test files, so a mutant is only as cheap as the
// files listed for its module. Daemon tests boot the daemon in this process through tsx and so run
// the mutated src; tests that spawn bin/postern.js run dist/ and would never see a mutant, and code
// on worker threads (delivery, analysis) does not see the active mutant either: none are listed.
import { mkdirSync } from 'node:fs';
import { Stryker } from '@stryker-mutator/core';

interface RuleModule {
  /** What `npm run mutate <name>` takes. */
  name: string;
  /** Files (or `file:from-to` line ranges) to mutate. */
  mutate: string[];
  /** Test files run against each mutant. */
  tests: string[];
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
    tests: ['test/messages/transitions.test.ts', 'test/messages/ledger-rules.test.ts', 'test/messages/ledger.test.ts'],
  },
  { name: 'cancel', mutate: ['src/outbound/cancel.ts'], tests: ['test/outbound/cancel.test.ts', 'test/outbound/cancel-race.test.ts'] },
  { name: 'accept', mutate: ['src/outbound/accept.ts'], tests: ['test/outbound/accept.test.ts', 'test/outbound/idempotency.test.ts'] },
  {
    name: 'routing',
    // The RCPT policy: the router, and the listener's RCPT TO handler that answers with its verdict.
    mutate: ['src/inbound/routing.ts', 'src/smtp/listener.ts:74-108'],
    tests: ['test/inbound/routing.test.ts', 'test/smtp/protocol.test.ts'],
  },
  {
    name: 'ssrf',
    mutate: ['src/lib/ssrf.ts', 'src/webhooks/ssrf.ts'],
    tests: ['test/lib/ssrf.test.ts', 'test/lib/ssrf-rules.test.ts', 'test/webhooks/ssrf.test.ts'],
  },
  { name: 'signing', mutate: ['src/webhooks/signing.ts'], tests: ['test/webhooks/signing.test.ts'] },
  {
    name: 'classify',
    mutate: ['src/channels/email/classify.ts', 'src/outbound/retry.ts'],
    tests: ['test/channels/email/classify.test.ts', 'test/outbound/retry.test.ts'],
  },
  { name: 'send-input', mutate: ['src/outbound/send-input.ts'], tests: ['test/outbound/send-input.test.ts'] },
];

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
  // Stryker types logLevel as its own enum; 'warn' is that enum's value.
  const results = await new Stryker(options as ConstructorParameters<typeof Stryker>[0]).runMutationTest();
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
process.exitCode = rows.some((r) => r.score < 80) ? 1 : 0;
