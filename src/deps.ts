// What every domain module may depend on: the infrastructure the composition root (app.ts) builds
// once and hands down. A module declares the slice it uses (`Pick<Deps, 'db' | 'clock'>`), so its
// tests build only that. Nothing here is a domain service; those are passed by name.
import type { Budgets } from './cluster/budgets.js';
import type { Config } from './config.js';
import type { Db, Dialect } from './db/database.js';
import type { WriteBatcher } from './db/group-commit.js';
import type { EventBus } from './events/bus.js';
import type { Clock } from './lib/clock.js';
import type { DnsResolver } from './lib/dns.js';
import type { Ids } from './lib/ids.js';
import type { Logger } from './lib/logger.js';
import type { SecretBox } from './lib/secret-box.js';

export interface Deps {
  config: Config;
  db: Db;
  dialect: Dialect;
  /** The group commit every busy writer shares (SQLite; a transaction per write on PostgreSQL). */
  writes: WriteBatcher;
  clock: Clock;
  ids: Ids;
  log: Logger;
  dns: DnsResolver;
  bus: EventBus;
  /** Rate budgets per key: in process on SQLite, shared by every node on PostgreSQL or Redis. */
  budgets: Budgets;
  /** Seals and opens what is kept encrypted at rest under `secrets.key` (credentials, DKIM keys). */
  box: SecretBox;
}
