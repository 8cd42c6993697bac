// The one way a test waits for something that has no event to await: ask again until it holds.
// A test never sleeps for a fixed time and then looks (docs/testing.md, "Time in tests"): on a
// loaded machine the sleep is too short, on an idle one too long. The bound is a bound, not a
// wait: it is only reached when the thing never happens, so it is generous, and reaching it fails
// the test with what it was waiting for.

const UNTIL_BOUND_MS = 60_000;

/**
 * Calls `probe` until it returns something other than undefined, null or false, and resolves with
 * that; throws naming `what` after `boundMs` (measured on the real clock). A probe that throws
 * stops the wait with its error.
 */
export async function until<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  boundMs = UNTIL_BOUND_MS,
): Promise<T> {
  const start = performance.now();
  for (let pause = 5; ; pause = Math.min(pause * 2, 50)) {
    const v = await probe();
    if (v !== undefined && v !== null && v !== false) return v;
    if (performance.now() - start > boundMs) throw new Error(`gave up after ${boundMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pause));
  }
}
