// GET /v1/context through the whole edge (auth lookup, scope check, rate limiter) next to a bare
// Express handler, both in child processes, measured in the same run. The bare handler is measured
// before and after Postern and the better figure kept, so warm-up order cannot flatter Postern.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fmt, load, ROOT, startBareExpress, startPostern, type LoadResult } from './lib.js';

async function bareRun(): Promise<LoadResult> {
  const bare = await startBareExpress();
  try {
    return await load({ url: `http://127.0.0.1:${bare.port}/v1/context` });
  } finally {
    await bare.stop();
  }
}

export async function run(): Promise<void> {
  const bareBefore = await bareRun();

  // Rate limits high enough not to bind, but on: the limiter's cost is part of the figure.
  const postern = await startPostern({ POSTERN_RATE_LIMIT_READ: '1000000', POSTERN_LOG_LEVEL: 'warn' });
  const cli = (...args: string[]) =>
    JSON.parse(
      execFileSync(process.execPath, [path.join(ROOT, 'bin', 'postern.js'), ...args], {
        env: { ...process.env, ...postern.env },
      }).toString(),
    );
  cli('workspace', 'create', '--slug', 'bench', '--name', 'Bench');
  const key = cli('key', 'create', '--workspace', 'bench', '--env', 'live').secret as string;
  const result = await load({ url: `http://127.0.0.1:${postern.port}/v1/context`, headers: { authorization: `Bearer ${key}` } });
  await postern.stop();

  const bareAfter = await bareRun();
  const bare = bareAfter.rps > bareBefore.rps ? bareAfter : bareBefore;
  console.log(fmt('bare Express handler (best of 2)', bare));
  console.log(fmt('GET /v1/context (auth+scope+limit)', result));
  console.log(`GET /v1/context reaches ${((result.rps / bare.rps) * 100).toFixed(0)}% of the bare handler (target ≥ 60%)`);
}
