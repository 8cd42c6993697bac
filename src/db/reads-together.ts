// Reads that arrive together, answered by one statement: the reading side of the group commit
// (group-commit.ts). On PostgreSQL every statement is a round trip and, outside a transaction, a
// transaction of its own; the dispatcher's steps for the messages of one claim run side by side,
// so their reads (the suppression list at the hold, the tracking setting when composing) are asked
// within one turn of the event loop. The keys asked during a turn are loaded after it, one
// statement per group (a workspace and environment), and each caller gets its own answer.
//
// A read is never older than its call: its statement starts after the turn in which it was asked.
// On SQLite, where a statement costs no round trip, callers read directly (`together: false`).
// Each use is held to its plain read by a property test (test/db/reads-together.test.ts).

/** Loads the values of `keys` in `group` (one statement); a key without a value is left out. */
export type LoadMany<G, K, V> = (group: G, keys: K[]) => Promise<Map<K, V>>;

// Keys per statement at most: one statement's parameters stay well within SQLite's and pg's limits.
const MAX_KEYS = 500;

interface Waiting<V> {
  resolve(v: V | undefined): void;
  reject(e: unknown): void;
}

/** Returns the read of one key, coalesced with the others of its turn by `groupOf`'s name. */
export function readsTogether<G, K, V>(
  load: LoadMany<G, K, V>,
  groupOf: (group: G) => string,
): (group: G, key: K) => Promise<V | undefined> {
  let pending = new Map<string, { group: G; keys: Map<K, Waiting<V>[]> }>();
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    const groups = [...pending.values()];
    pending = new Map();
    for (const { group, keys } of groups) {
      const all = [...keys.keys()];
      for (let i = 0; i < all.length; i += MAX_KEYS) {
        const slice = all.slice(i, i + MAX_KEYS);
        load(group, slice).then(
          (found) => {
            for (const k of slice) for (const w of keys.get(k)!) w.resolve(found.get(k));
          },
          (err: unknown) => {
            for (const k of slice) for (const w of keys.get(k)!) w.reject(err);
          },
        );
      }
    }
  }

  return (group, key) =>
    new Promise<V | undefined>((resolve, reject) => {
      const name = groupOf(group);
      let entry = pending.get(name);
      if (!entry) pending.set(name, (entry = { group, keys: new Map() }));
      const waiting = entry.keys.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else entry.keys.set(key, [{ resolve, reject }]);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
