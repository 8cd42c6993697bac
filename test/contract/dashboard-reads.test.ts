// The dashboard and the API description read one contract. ui/src/api.ts types what a call answers
// from the contract's RESPONSES entry of the operation whose path matches the one called, and
// operations.ts describes each operation's success with that same entry: so this test holds the
// runtime half (every /v1 path the dashboard calls names an operation, and that operation's success
// schema IS the contract's entry, the same object), and `tsc -p ui/tsconfig.json` (in
// `npm run typecheck`, so in lint) holds the typed half.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { RESPONSES, type OperationKey } from '../../src/contract/responses.js';
import { OPERATIONS, type Operation } from '../../src/http/openapi/operations.js';

const root = path.resolve(import.meta.dirname, '..', '..');
const UI = path.join(root, 'ui', 'src');

const METHODS = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', del: 'DELETE', upload: 'POST' } as const;

interface Call {
  file: string;
  method: string;
  /** The called path with each `${…}` as `:param` and the query string left out. */
  path: string;
}

function uiFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? uiFiles(path.join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [path.join(dir, e.name)] : [],
  );
}

// A template literal's path: a query string (`${query(…)}`, `${filterQuery(…)}`, always last) and a
// trailing `${rest}` add no segment; any other `${…}` stands for one segment. `const base = \`…\`` and path helpers
// (`const tpath = (…) => \`…${rest}\``) of the same file are expanded first.
function pathOf(template: string, consts: Map<string, string>): string {
  const expanded = template.replace(/^\$\{(\w+)\}/, (whole, name: string) => consts.get(name) ?? whole);
  return expanded
    .replace(/\$\{(?:query|filterQuery)\(.*$/s, '')
    .replace(/\?.*$/, '')
    .replace(/\$\{rest\}$/, '')
    .replace(/\$\{[^}]*\}/g, ':param');
}

/** Every call of get/post/put/patch/del/upload with a path the dashboard makes, as written in ui/src. */
function dashboardCalls(): Call[] {
  const calls: Call[] = [];
  for (const file of uiFiles(UI)) {
    const src = readFileSync(file, 'utf8');
    const consts = new Map<string, string>();
    for (const m of src.matchAll(/const (\w+) = (?:<[^>]*>)?(?:\([^)]*\)\s*=>\s*)?`([^`]*)`/g)) consts.set(m[1], m[2]);
    const rel = path.relative(root, file);
    // A call with a literal path, or with a path helper and an optional literal rest.
    for (const m of src.matchAll(
      /(?<![\w.])(get|post|put|patch|del|upload)\(\s*(?:`([^`]*)`|'([^']*)'|(\w+)\(([^,)]*)(?:,\s*'([^']*)')?\))/g,
    )) {
      const method = METHODS[m[1] as keyof typeof METHODS];
      if (m[4] !== undefined) {
        const helper = consts.get(m[4]);
        if (helper === undefined) continue;
        calls.push({ file: rel, method, path: pathOf(helper.replace(/\$\{rest\}$/, m[6] ?? ''), consts) });
      } else {
        const raw = m[2] ?? m[3];
        if (!raw.startsWith('/') && !raw.startsWith('${')) continue;
        calls.push({ file: rel, method, path: pathOf(raw, consts) });
      }
    }
  }
  return calls;
}

const segments = (p: string) => p.split('/');
function matches(called: string, pattern: string): boolean {
  const a = segments(called);
  const b = segments(pattern);
  return a.length === b.length && a.every((s, i) => s === b[i] || (b[i].startsWith(':') && s !== ''));
}

/** The operation a call names: the same method and a path that matches segment by segment (a literal segment wins). */
function operationOf(call: Call): Operation | undefined {
  const candidates = OPERATIONS.filter((o) => o.method === call.method && matches(call.path, o.path));
  return candidates.sort((x, y) => x.path.split(':').length - y.path.split(':').length)[0];
}

const firstJson = (op: Operation) => op.success.find((s) => 'json' in s && s.json !== undefined && s.status < 300);

t.test('every /v1 path the dashboard calls names an operation whose success schema is the contract’s entry', async (t) => {
  const calls = dashboardCalls();
  const v1 = calls.filter((c) => c.path.startsWith('/v1/'));
  t.ok(v1.length >= 30, `the scan finds the dashboard's /v1 calls (${v1.length})`);
  for (const call of v1) {
    const op = operationOf(call);
    if (!op) {
      t.fail(`${call.file}: ${call.method} ${call.path} names no operation of the API description`);
      continue;
    }
    const key = `${op.method} ${op.path}` as OperationKey;
    const success = firstJson(op);
    t.ok(success && 'json' in success, `${key} answers JSON`);
    t.equal(
      success && 'json' in success ? success.json : undefined,
      RESPONSES[key],
      `${call.file}: ${key} is described by RESPONSES['${key}']`,
    );
  }
});

t.test('every operation that answers JSON is described by its RESPONSES entry, and RESPONSES has no other entry', async (t) => {
  const keys = new Set<string>();
  for (const op of OPERATIONS) {
    const success = firstJson(op);
    if (!success || !('json' in success)) continue;
    const key = `${op.method} ${op.path}`;
    keys.add(key);
    t.equal(success.json, RESPONSES[key as OperationKey], `${key}: its success schema is RESPONSES['${key}']`);
  }
  t.same(Object.keys(RESPONSES).sort(), [...keys].sort(), 'one entry per JSON operation');
});

t.test('the dashboard is type-checked against the contract in lint', async (t) => {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.match(pkg.scripts.typecheck, 'tsc -p ui/tsconfig.json', 'npm run typecheck checks ui/');
  t.match(pkg.scripts.lint, 'npm run typecheck', 'and lint runs it');
  const api = readFileSync(path.join(UI, 'api.ts'), 'utf8');
  const code = api.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '');
  t.notMatch(code, /\bany\b/, 'api.ts has no `any`');
  t.match(api, "from '../../src/contract/responses'", 'api.ts types answers from the contract');
});
