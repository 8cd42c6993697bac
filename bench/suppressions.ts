// `npm run bench suppressions`: a suppression list of BENCH_SUPPRESSIONS_LINES lines (1,000,000 by
// default) imported as CSV through POST /v1/suppressions/import into the daemon in its own process
// (SQLite), the body generated as it is sent so neither side holds it whole; lines per second, and
// the daemon's peak resident memory (VmHWM) before and after, which stays flat when the import
// streams. Then the same list exported (GET /v1/suppressions/export) and counted. Loopback only.
import http from 'node:http';
import { readFileSync, rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { benchWorkspace, startPostern } from './lib.js';

const LINES = Number(process.env.BENCH_SUPPRESSIONS_LINES ?? 1_000_000);

const peakKiB = (pid: number) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

function* csv(): Generator<string> {
  yield 'email,reason\n';
  const reasons = ['bounce', 'complaint', 'unsubscribe', 'manual'];
  let block = '';
  for (let i = 0; i < LINES; i++) {
    block += `user${i}@bench${i % 97}.example,${reasons[i % 4]}\n`;
    if (block.length > 64 * 1024) {
      yield block;
      block = '';
    }
  }
  if (block) yield block;
}

function post(port: number, key: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/suppressions/import',
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    Readable.from(csv()).pipe(req);
  });
}

export async function run(): Promise<void> {
  const daemon = await startPostern({ POSTERN_LOG_LEVEL: 'error' });
  try {
    const key = await benchWorkspace(daemon.env, { keyEnv: 'live', plan: 'custom' });
    const pid = daemon.child.pid!;
    const before = peakKiB(pid);
    const started = process.hrtime.bigint();
    const r = await post(daemon.port, key);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (r.status !== 200) throw new Error(`import answered ${r.status}: ${r.body.slice(0, 300)}`);
    const result = JSON.parse(r.body) as { lines: number; stored: number; refused: number };
    const after = peakKiB(pid);
    console.log(
      `import of ${LINES.toLocaleString('en')} CSV lines: ${seconds.toFixed(1)} s, ${Math.round(LINES / seconds).toLocaleString('en')} lines/s; stored ${result.stored}, refused ${result.refused}`,
    );
    console.log(`  daemon peak memory (VmHWM): ${(before / 1024).toFixed(0)} MiB before, ${(after / 1024).toFixed(0)} MiB after`);
    const exportStarted = process.hrtime.bigint();
    const res = await fetch(`http://127.0.0.1:${daemon.port}/v1/suppressions/export?format=csv`, {
      headers: { authorization: `Bearer ${key}` },
    });
    let lines = -1;
    for await (const chunk of res.body!) for (const byte of chunk as Uint8Array) if (byte === 10) lines++;
    const exportSeconds = Number(process.hrtime.bigint() - exportStarted) / 1e9;
    console.log(
      `export: ${lines.toLocaleString('en')} lines in ${exportSeconds.toFixed(1)} s; daemon peak memory after: ${(peakKiB(pid) / 1024).toFixed(0)} MiB`,
    );
  } finally {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  }
}
