// The node flags that size the event loop's young generation (lib/heap-sizes.ts): every launcher we
// ship passes them, the daemon says when it was started without them, and once it runs they no
// longer size the threads, which get the sizes they are started with.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { LAUNCH_FLAGS, launchedWithFlags } from '../src/lib/heap-sizes.js';
import { BIN, spawnDaemon } from './helpers/spawn.js';
import { sqliteOnly } from './helpers/databases.js';

sqliteOnly("node's launch flags and the threads' heap sizes; nothing here reads or writes stored data");

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const flags = LAUNCH_FLAGS.join(' ');

t.test('every shipped launcher passes the flags', async (t) => {
  t.equal(read('bin/postern.js').split('\n')[0], `#!/usr/bin/env -S node ${flags}`, 'bin/postern.js (npx postern, postern on the PATH)');
  t.equal(
    (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start,
    `node ${flags} bin/postern.js serve`,
    'npm start',
  );
  t.match(
    read('systemd/postern.service'),
    new RegExp(`^ExecStart=/usr/bin/node ${flags} /opt/postern/bin/postern\\.js serve `, 'm'),
    'the systemd unit',
  );
  const entrypoint = /^ENTRYPOINT (.*)$/m.exec(read('Dockerfile'))?.[1];
  t.same(JSON.parse(entrypoint ?? 'null'), ['node', ...LAUNCH_FLAGS, 'bin/postern.js'], 'the Docker image');
});

t.test('launchedWithFlags reads the command line and NODE_OPTIONS', async (t) => {
  t.ok(launchedWithFlags([...LAUNCH_FLAGS]));
  t.ok(launchedWithFlags(['--enable-source-maps'], ` ${flags} --trace-warnings`));
  t.notOk(launchedWithFlags([]));
  t.notOk(launchedWithFlags(['--max-semi-space-size=16']));
});

t.test('the daemon says when it was started without them', async (t) => {
  const start = async (viaShebang: boolean) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'postern-flags-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const d = await spawnDaemon(
      { POSTERN_DATA_DIR: dir, POSTERN_HTTP_PORT: '0', POSTERN_SMTP_PORT: '0', POSTERN_SMTP_HOST: '127.0.0.1', NODE_OPTIONS: '' },
      [],
      viaShebang ? { command: BIN } : {},
    );
    d.child.kill('SIGTERM');
    await d.exited;
    return d.lines.map((l) => JSON.parse(l) as { msg: string }).filter((l) => l.msg.startsWith('started without'));
  };
  t.equal((await start(true)).length, 0, 'run through its first line: no word');
  const without = await start(false);
  t.equal(without.length, 1, 'node bin/postern.js serve: one line');
  t.match(without[0], { msg: new RegExp(`^started without ${flags}: `), level: 30 });
});

// Each isolate's young generation, read as the most its new space reached while objects outlive
// collections (V8 grows it to its limit then).
const MEASURE = `
const v8 = require('node:v8');
const { Worker } = require('node:worker_threads');
const grow = \`const v8 = require('node:v8'); let keep = [], max = 0;
for (let i = 0; i < 2e6; i++) {
  keep.push({ i, s: 'x' + i });
  if (keep.length > 200000) keep = [];
  if (i % 10000 === 0) max = Math.max(max, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
}
max\`;
const main = eval(grow);
(process.env.SIZE_HEAPS ? import(process.env.SIZE_HEAPS) : Promise.resolve(null)).then((m) => {
  m?.sizeHeaps({ heapGrowthPercent: 0 });
  const w = new Worker(\`require('node:worker_threads').parentPort.postMessage(eval(\${JSON.stringify(grow)}))\`, { eval: true });
  w.once('message', (thread) => { console.log(JSON.stringify({ main, thread })); void w.terminate(); });
});
`;

t.test('once the daemon runs, the flags no longer size its threads', async (t) => {
  const measure = (sizeHeaps: boolean) =>
    JSON.parse(
      execFileSync(process.execPath, [...LAUNCH_FLAGS, '-e', MEASURE], {
        env: { ...process.env, NODE_OPTIONS: '', SIZE_HEAPS: sizeHeaps ? path.join(ROOT, 'dist', 'lib', 'heap-sizes.js') : '' },
      }).toString(),
    ) as { main: number; thread: number };
  const before = measure(false);
  t.equal(before.thread, before.main, 'without sizeHeaps a thread gets the launch flag’s size');
  const after = measure(true);
  t.ok(after.thread > after.main, `with it, a thread's young generation (${after.thread} bytes) outgrows the event loop's (${after.main})`);
});
