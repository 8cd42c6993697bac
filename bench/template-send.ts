// `npm run bench template-send`: a template send against send-raw of what it renders to (issue 40,
// goal 4: `POST /v1/send` with a template of 20 variables ≥ 0.9× `POST /v1/send-raw` of the
// rendered result). One daemon in its own process (SQLite, a test key: the dispatcher renders and
// settles every message without a network), the template of bench/template-20.ts published through
// the API. Each run sends for SECONDS on CONNECTIONS connections and then waits until the dispatcher
// has settled everything it accepted, so the rate is of messages accepted *and* rendered and
// settled (a template's cost is at delivery, not at accept). The two shapes alternate, ROUNDS each.
// BENCH_CPU_PROF=<dir> profiles the daemon; BENCH_SHAPE=template or raw runs one shape alone.
import { rmSync } from 'node:fs';
import type { EmailOutput } from '../src/contract/channels.js';
import { renderContent } from '../src/templates/render.js';
import { benchWorkspace, cpuSeconds, load, startPostern } from './lib.js';
import { template20, vars20 } from './template-20.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 32;
const DRAIN_LIMIT_MS = 60_000;

export async function run(): Promise<void> {
  // BENCH_CPU_PROF=<dir>: the daemon writes a V8 CPU profile there when it stops.
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const daemon = await startPostern({ POSTERN_LOG_LEVEL: 'error' }, prof);
  try {
    const secret = await benchWorkspace(daemon.env, { keyEnv: 'test', plan: 'custom' });
    const base = `http://127.0.0.1:${daemon.port}`;
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const call = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(base + route, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
      return (await res.json()) as Record<string, unknown>;
    };
    await call('POST', '/v1/templates', { slug: 'order', channel: 'email' });
    await call('PUT', '/v1/templates/order/draft', { content: template20 });
    await call('POST', '/v1/templates/order/publish');
    const { subject, html, text } = renderContent('email', template20, vars20).output as EmailOutput;
    const all = [
      {
        label: 'POST /v1/send, template of 20 variables',
        route: '/v1/send',
        body: JSON.stringify({ to: 'bench@example.com', template: 'order', vars: vars20 }),
        rates: [] as number[],
        cpu: [] as number[],
      },
      {
        label: 'POST /v1/send-raw, the rendered result',
        route: '/v1/send-raw',
        body: JSON.stringify({ channel: 'email', to: 'bench@example.com', content: { subject, html, text } }),
        rates: [] as number[],
        cpu: [] as number[],
      },
    ];
    // BENCH_SHAPE=template or raw: that shape alone (to profile one).
    const only = process.env.BENCH_SHAPE;
    const shapes = only ? all.filter((s) => s.route === (only === 'raw' ? '/v1/send-raw' : '/v1/send')) : all;
    // Nothing left queued or in flight: every accepted message settled.
    const drained = async () => {
      const deadline = performance.now() + DRAIN_LIMIT_MS;
      for (;;) {
        const open = await Promise.all(
          ['queued', 'rendered', 'dispatched'].map(
            async (s) => ((await call('GET', `/v1/messages?status=${s}&limit=1`)).data as unknown[]).length,
          ),
        );
        if (open.every((n) => n === 0)) return;
        if (performance.now() > deadline) throw new Error('the dispatcher did not settle the run within a minute');
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    // Warm-up of each shape, not counted.
    for (const s of shapes) {
      await load({ url: base + s.route, method: 'POST', headers, body: s.body, connections: CONNECTIONS, seconds: 2, warmup: 0 });
      await drained();
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of shapes) {
        const cpu0 = cpuSeconds(daemon.child.pid!);
        const t0 = performance.now();
        const r = await load({
          url: base + s.route,
          method: 'POST',
          headers,
          body: s.body,
          connections: CONNECTIONS,
          seconds: SECONDS,
          warmup: 0,
        });
        await drained();
        const elapsed = (performance.now() - t0) / 1000;
        const accepted = r.total - r.non2xx - r.errors;
        s.rates.push(accepted / elapsed);
        s.cpu.push(((cpuSeconds(daemon.child.pid!) - cpu0) * 1000) / accepted);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `${ROUNDS} alternated runs of ${SECONDS} s each, ${CONNECTIONS} connections, a test key; rate = accepted ÷ (run + the dispatcher settling it)`,
    );
    console.log(`${'shape'.padEnd(44)} ${'msg/s (median; each run)'.padEnd(34)} daemon CPU a message`);
    for (const s of shapes) {
      console.log(
        `${s.label.padEnd(44)} ${`${Math.round(median(s.rates))} (${s.rates.map(Math.round).join(' · ')})`.padEnd(34)} ${median(s.cpu).toFixed(2)} ms`,
      );
    }
    if (shapes.length < 2) return;
    const ratio = median(shapes[0].rates) / median(shapes[1].rates);
    console.log(`template send / send-raw of the rendered result: ${ratio.toFixed(2)} (goal ≥ 0.90)`);
  } finally {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
  }
}
