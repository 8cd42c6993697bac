// ESLint: the recommended rules, typescript-eslint's type-aware ones, and the architecture rules
// an import graph cannot see (dependency-cruiser checks the rest: .dependency-cruiser.cjs).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

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
  {
    // Only the message ledger changes a message row (the dispatcher's queue may set and release
    // its lease, which is not the message's state).
    files: ['src/**/*.ts'],
    ignores: ['src/messages/**', 'src/outbound/queue.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.property.name=/^(updateTable|insertInto|deleteFrom)$/][arguments.0.value='messages']",
          message: 'only the message ledger (src/messages/) writes the messages table',
        },
      ],
    },
  },
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
