// `npm run bench [name…]`: runs the named benchmarks (all when none is named) and prints figures.
// An explicit registry: each capability adds its benchmark here. Each is imported only when it
// runs: some import test helpers that load tap (test/helpers/databases.ts), and tap, loaded in a
// process that is not a test, fails a "timeout!" test after 30 s and kills the process with
// SIGALRM 10 s later, in the middle of a longer benchmark (leaving its Postfix or sink behind).
// The cluster benchmark itself needs such a helper (a fresh PostgreSQL database), so tap's
// timeout is turned off for the process before anything can load it.
process.env.TAP_TIMEOUT ??= '0';

type Bench = () => Promise<{ run: () => Promise<void> }>;

const benches: Record<string, Bench> = {
  api: () => import('./api.js'),
  render: () => import('./render.js'),
  send: () => import('./send.js'),
  channels: () => import('./channels.js'),
  delivery: () => import('./delivery.js'),
  inbound: () => import('./inbound.js'),
  webhooks: () => import('./webhooks.js'),
  dashboard: () => import('./dashboard.js'),
  cluster: () => import('./cluster.js'),
  reports: () => import('./reports.js'),
  submission: () => import('./submission.js'),
  suppressions: () => import('./suppressions.js'),
  'template-send': () => import('./template-send.js'),
};

const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : Object.keys(benches)) {
  const bench = benches[name];
  if (!bench) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n== ${name}`);
  await (await bench()).run();
}
process.exit(0);
