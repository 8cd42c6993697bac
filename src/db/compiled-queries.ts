// Hot statements compiled once. Kysely builds and compiles every query afresh: for the statements
// that run for every message (insert at accept, the dispatcher's compare-and-swap updates, the
// signing-key lookup) building cost 10–27 µs each, more than SQLite took to run them. A statement
// of a given shape (its key) is still built by Kysely the first time, so it stays portable between
// SQLite and PostgreSQL; later calls reuse its SQL text with new parameters.
//
// The caller states the parameters in the order the statement binds them; the first compilation
// checks that claim against what Kysely produced, and a shape whose parameters do not match is
// simply never cached (built each time, as before), so a wrong order can cost speed, never data.
// SQL text differs between dialects, so there is one cache per database (queriesFor).
import { CompiledQuery, type Compilable } from 'kysely';
import type { Db } from './database.js';

const MAX_SHAPES = 200;

export interface QueryCache {
  /** The compiled query of `key`'s shape with `params`; `build` runs only until the shape is cached. */
  compiled<R>(key: string, params: readonly unknown[], build: () => Compilable<R>): CompiledQuery<R>;
}

const caches = new WeakMap<Db, QueryCache>();

/** The statement cache of a database (transactions of it use the same one). */
export function queriesFor(db: Db): QueryCache {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = createQueryCache()));
  return cache;
}

export function createQueryCache(): QueryCache {
  const sqlOf = new Map<string, string>();
  const unstable = new Set<string>();
  return {
    compiled<R>(key: string, params: readonly unknown[], build: () => Compilable<R>): CompiledQuery<R> {
      const text = sqlOf.get(key);
      if (text !== undefined) return CompiledQuery.raw(text, [...params]);
      const built = build().compile();
      if (!unstable.has(key)) {
        const same = built.parameters.length === params.length && built.parameters.every((p, i) => p === params[i]);
        if (same && sqlOf.size < MAX_SHAPES) sqlOf.set(key, built.sql);
        else unstable.add(key);
      }
      return built;
    },
  };
}
