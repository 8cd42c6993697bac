// The architecture as rules (docs/architecture.md explains each): `npm run lint` fails when an
// import breaks one. Type-only imports count: a type that runs back up a layer is a dependency too.
const DOMAIN =
  '^src/(workspaces|templates|messages|outbound|channels|inbound|domains|events|webhooks|forwarding|suppressions|reports|db|lib)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycles: every module can be understood (and tested) from what it imports.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-not-to-adapters',
      severity: 'error',
      comment: 'Domain modules never import the adapters (HTTP, SMTP, CLI) or the composition root; adapters call them.',
      from: { path: [DOMAIN, '^src/(channel|deps|config|config-renames)\\.ts$'] },
      to: { path: ['^src/(http|smtp|cli)/', '^src/(app|main|cli)\\.ts$'] },
    },
    {
      name: 'domain-not-to-protocol-packages',
      severity: 'error',
      comment: 'Express, smtp-server and node-cron belong to the adapters and the composition root.',
      from: { path: [DOMAIN, '^src/(channel|deps|config|config-renames)\\.ts$'] },
      to: { dependencyTypes: ['npm'], path: '^node_modules/(express|smtp-server|node-cron)/' },
    },
    {
      name: 'app-only-from-entries',
      severity: 'error',
      comment: 'Only the entries (main.ts, the CLI) import the composition root; everything else takes Deps (deps.ts).',
      from: { pathNot: ['^src/main\\.ts$', '^src/cli\\.ts$', '^src/cli/', '^test/', '^bench/'] },
      to: { path: '^src/app\\.ts$' },
    },
    {
      name: 'express-only-in-http',
      severity: 'error',
      comment: 'Routers live in src/http/routes/ (and the HTTP plumbing beside them): no Express anywhere else in src/.',
      from: { path: '^src/', pathNot: ['^src/http/'] },
      to: { dependencyTypes: ['npm'], path: '^node_modules/express/' },
    },
    {
      name: 'routes-only-from-app',
      severity: 'error',
      comment: 'A router is mounted by the composition root only.',
      from: { path: '^src/', pathNot: ['^src/app\\.ts$', '^src/http/routes/'] },
      to: { path: '^src/http/routes/' },
    },
    {
      name: 'dashboard-only-from-app',
      severity: 'error',
      comment: 'The dashboard adapter (src/http/dashboard/) is mounted by the composition root only.',
      from: { path: '^src/', pathNot: ['^src/app\\.ts$', '^src/http/dashboard/'] },
      to: { path: '^src/http/dashboard/' },
    },
    {
      name: 'ui-apart-from-the-daemon',
      severity: 'error',
      comment: 'The browser code (ui/) talks to the daemon over HTTP only: it never imports src/, and src/ never imports it.',
      from: { path: '^ui/' },
      to: { path: '^(src|test|bench)/' },
    },
    {
      name: 'daemon-apart-from-the-ui',
      severity: 'error',
      comment: 'The daemon serves the built bundle (dist/ui) as files; it never imports the browser code.',
      from: { path: '^src/' },
      to: { path: '^ui/' },
    },
    {
      name: 'smtp-server-only-in-smtp',
      severity: 'error',
      comment: 'The SMTP listener is the one place that speaks smtp-server.',
      from: { path: '^src/', pathNot: ['^src/smtp/'] },
      to: { dependencyTypes: ['npm'], path: '^node_modules/smtp-server/' },
    },
    {
      name: 'channels-not-to-each-other',
      severity: 'error',
      comment: 'A channel folder never imports another channel folder; what they share lives in src/channels/*.ts or src/channel.ts.',
      from: { path: '^src/channels/([^/]+)/' },
      to: { path: '^src/channels/[^/]+/', pathNot: '^src/channels/$1/' },
    },
    {
      name: 'channel-contract-imports-nothing-of-ours',
      severity: 'error',
      comment: 'src/channel.ts is the vocabulary every layer shares; it depends on nothing of ours.',
      from: { path: '^src/channel\\.ts$' },
      to: { path: '^src/' },
    },
    {
      name: 'db-at-the-bottom',
      severity: 'error',
      comment: 'Storage depends on nothing above it but the channel vocabulary.',
      from: { path: '^src/db/' },
      to: { path: '^src/', pathNot: ['^src/db/', '^src/channel\\.ts$', '^src/lib/'] },
    },
    {
      name: 'lib-at-the-bottom',
      severity: 'error',
      comment: "lib/ holds small helpers that know nothing of Postern's domain.",
      from: { path: '^src/lib/' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'src-not-to-tests',
      severity: 'error',
      comment: 'The daemon never imports test or benchmark code.',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'no-orphans',
      severity: 'error',
      comment: 'A module nothing imports is dead weight (entries and thread scripts are started by name).',
      from: {
        orphan: true,
        pathNot: [
          '\\.d\\.ts$',
          '^src/main\\.ts$',
          '^src/cli\\.ts$',
          '^src/outbound/delivery-thread\\.ts$',
          '^src/inbound/analysis-worker\\.ts$',
          '^(test|bench)/',
          '(^|/)\\.[^/]+\\.(js|cjs|mjs|json)$',
          '^eslint\\.config\\.js$',
          '^bin/',
          '^ui/src/main\\.tsx$',
          '^ui/build\\.mjs$',
        ],
      },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: ['^dist/', '^data/'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
