// ESLint: the recommended rules, typescript-eslint's type-aware ones, and the architecture rules
// an import graph cannot see (dependency-cruiser checks the rest: .dependency-cruiser.cjs).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// Tables with one writer: only the owners' files insert, update or delete rows of the table.
const OWNED_TABLES = [
  // The message ledger changes a message row (the dispatcher's queue may set and release its
  // lease, which is not the message's state).
  {
    table: 'messages',
    owners: ['src/messages/**', 'src/outbound/queue.ts'],
    message: 'only the message ledger (src/messages/) writes the messages table',
  },
  // Events are written one way (their id, their fan-out decided by the insert): callers hand
  // events/record.ts their transaction.
  { table: 'events', owners: ['src/events/record.ts'], message: 'only src/events/record.ts writes the events table' },
];

/** One config per set of owners (each may write its table, not the others'), and one for the rest of src/. */
function oneWriterRules() {
  const restrict = (tables) => ({
    'no-restricted-syntax': [
      'error',
      ...tables.map(({ table, message }) => ({
        selector: `CallExpression[callee.property.name=/^(updateTable|insertInto|deleteFrom)$/][arguments.0.value='${table}']`,
        message,
      })),
    ],
  });
  return [
    { files: ['src/**/*.ts'], ignores: OWNED_TABLES.flatMap((t) => t.owners), rules: restrict(OWNED_TABLES) },
    ...OWNED_TABLES.map((owned) => ({ files: owned.owners, rules: restrict(OWNED_TABLES.filter((t) => t !== owned)) })),
  ];
}

export default tseslint.config(
  { ignores: ['dist/', 'sdk/dist/', 'node_modules/', 'data/', 'coverage/', '.tap/', '.stryker-tmp/', 'reports/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // JSON columns, untyped packages (mailauth) and wire formats are `any` at the edge by nature;
      // these four would flag every use of such a value instead of the places that matter.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true, allowNullish: true }],
      'no-control-regex': 'off',
    },
  },
  ...oneWriterRules(),
  {
    // The dashboard runs in the browser. Its props carry callbacks declared as methods, event
    // handlers may be async (Preact ignores what they return), and API replies are JSON.
    files: ['ui/**'],
    languageOptions: { globals: globals.browser },
    rules: {
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Migrations are written against Kysely<any> on purpose: they never import the app's types.
    files: ['src/db/migrations/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Tests and benchmarks read JSON responses as `any`, and tap's t.test() calls are not awaited
    // (tap tracks them itself).
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', name: ['test', 'rejects', 'resolves', 'resolveMatch', 'resolveMatchSnapshot'], package: '@tapjs/test' },
          ],
        },
      ],
    },
  },
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
);
