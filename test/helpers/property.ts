// Property tests with fast-check: a fast path against the slow path it stands for, over generated
// inputs. Each run is seeded: FC_SEED replays a run (FC_RUNS changes how many cases), otherwise
// the seed is random and printed, so every run can be replayed. On a failure fast-check's report
// gives the seed, the path of the shrunk case and the counterexample; keep that case as a fixed
// regression test beside the property.
import { randomInt } from 'node:crypto';
import fc from 'fast-check';

interface T {
  comment(message: string): void;
  pass(message: string): void;
  fail(message: string): void;
}

/** The seed of this process's runs: FC_SEED, or a random one. */
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : randomInt(2 ** 31 - 1);

/**
 * Checks a property over `numRuns` generated cases (FC_RUNS overrides), one assertion whatever
 * happens: a pass, or a failure with fast-check's report. Returns how many cases it asked for.
 */
export async function holds<Ts>(t: T, name: string, property: fc.IRawProperty<Ts>, numRuns = 200): Promise<number> {
  const runs = process.env.FC_RUNS ? Number(process.env.FC_RUNS) : numRuns;
  if (!Number.isSafeInteger(SEED)) throw new Error(`FC_SEED must be an integer, not ${process.env.FC_SEED}`);
  t.comment(`${name}: seed ${SEED} (FC_SEED=${SEED} replays it)`);
  try {
    await fc.assert(property, { seed: SEED, numRuns: runs, includeErrorInReport: true });
    t.pass(`${name}: ${runs} generated cases`);
  } catch (err) {
    t.fail(`${name}: ${(err as Error).message}`);
  }
  return runs;
}

/**
 * `bytes` cut into pieces of the given sizes (generated, so a reader meets every boundary), the
 * rest in one last piece.
 */
export function cutAt(bytes: Buffer, sizes: number[]): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const size of sizes) {
    if (at >= bytes.length) break;
    out.push(bytes.subarray(at, at + size));
    at += size;
  }
  if (at < bytes.length) out.push(bytes.subarray(at));
  return out;
}
