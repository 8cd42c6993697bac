// Packages a daemon may never need, loaded on first use: each costs megabytes of heap once loaded
// (mailauth and its ASN.1 stack about 10, mailparser 6.5, undici 5, pg 3), and most daemons use only
// some of them — SQLite or PostgreSQL, Redis or not, forwarding, reports, web push — while the
// analysis and delivery threads load their own copies of the rest. Each is CommonJS, so a
// synchronous require at the point of use keeps the callers' signatures as they were.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `id` required on the first call and kept. */
export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}
