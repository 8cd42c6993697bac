// `npm run bench [name…]`: runs the named benchmarks (all when none is named) and prints figures.
// An explicit registry: each capability adds its benchmark here.
import { run as api } from './api.js';
import { run as render } from './render.js';
import { run as send } from './send.js';
import { run as channels } from './channels.js';
import { run as delivery } from './delivery.js';
import { run as inbound } from './inbound.js';
import { run as webhooks } from './webhooks.js';
import { run as dashboard } from './dashboard.js';
import { run as cluster } from './cluster.js';
import { run as reports } from './reports.js';
import { run as submission } from './submission.js';

const benches: Record<string, () => Promise<void>> = {
  api,
  render,
  send,
  channels,
  delivery,
  inbound,
  webhooks,
  dashboard,
  cluster,
  reports,
  submission,
};

const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : Object.keys(benches)) {
  const bench = benches[name];
  if (!bench) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n== ${name}`);
  await bench();
}
process.exit(0);
