// Work that runs one call at a time, in the order the calls came. For CPU work done as a stream over
// many turns of the event loop (parsing a message): started side by side, such calls interleave and
// each holds its half-done state until all are done. Run in turn they take the same total time, the
// first result comes sooner, and only one call's state is in memory at once.

/** A queue of one: `run(f)` starts `f` once every earlier call has settled, and gives its result. */
export function inTurn(): <T>(work: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return (work) => {
    const turn = last.then(work);
    // A call that fails fails for its caller alone; the next one still runs.
    last = turn.catch(() => undefined);
    return turn;
  };
}
