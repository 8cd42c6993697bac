// How big V8 lets the daemon's heaps get. Most of it is set at start from `memory.*`; the event
// loop's young generation is the exception: V8 sizes an isolate's young generation when it makes
// it, so for the main thread only Node's command line can (`--max-semi-space-size`). Every launcher
// we ship passes LAUNCH_FLAGS (bin/postern.js's first line, `npm start`, the systemd unit, the
// Docker image; test/launch-flags.test.ts holds them to it).
import v8 from 'node:v8';

/**
 * 8 MB semi-spaces for the event loop, half V8's own: receiving 100 KiB mail on 100 sessions the
 * daemon peaks about 20 MiB lower, at no cost in speed measured on any benchmark
 * (docs/performance.md, "The event loop's young generation").
 */
export const LAUNCH_FLAGS: readonly string[] = ['--max-semi-space-size=8'];

/** Whether this process was started with LAUNCH_FLAGS (on its command line or in NODE_OPTIONS). */
export function launchedWithFlags(execArgv: readonly string[], nodeOptions = ''): boolean {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)]);
  return LAUNCH_FLAGS.every((f) => given.has(f));
}

/**
 * Sets what can be set once the process runs, before any thread starts:
 * - Under load V8 lets a heap grow to several times what its last full collection kept (most of it
 *   garbage awaiting the next one): delivering 5,000 messages the event loop's old generation held
 *   96 MB for 35 MB live, and the daemon peaked at 317–357 MiB. Doubling at most kept it to
 *   258–269 MiB for 3–5 % of delivery speed. The flag is process-wide, so it holds for the threads
 *   too, and V8 reads it at each collection, so setting it at start is enough.
 * - The launch flag's semi-space size is process-wide too, and it would override the size each
 *   thread is started with (`resourceLimits`). Cleared now that the event loop's young generation
 *   exists, threads get theirs: the analysis threads `memory.analysisYoungGenerationMb`, the
 *   delivery threads V8's own (at half of it, their CPU per message rose by a tenth).
 */
export function sizeHeaps(memory: { heapGrowthPercent: number }): void {
  if (memory.heapGrowthPercent > 0) v8.setFlagsFromString(`--heap-growing-percent=${memory.heapGrowthPercent}`);
  v8.setFlagsFromString('--max-semi-space-size=0');
}
