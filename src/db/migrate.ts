// Migrations are an explicit, numbered registry (no directory scanning, so the compiled build and
// the TypeScript sources run the same list). Each is frozen once released; add a new number instead.
import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './database.js';
import * as m0001 from './migrations/0001-foundation.js';
import * as m0002 from './migrations/0002-templates.js';
import * as m0003 from './migrations/0003-messages.js';
import * as m0004 from './migrations/0004-inbound.js';
import * as m0005 from './migrations/0005-email.js';
import * as m0006 from './migrations/0006-webhooks.js';
import * as m0007 from './migrations/0007-connections.js';
import * as m0008 from './migrations/0008-domain-capabilities.js';
import * as m0009 from './migrations/0009-received-stamps.js';
import * as m0010 from './migrations/0010-operators.js';
import * as m0011 from './migrations/0011-message-stats.js';
import * as m0012 from './migrations/0012-domain-drift.js';
import * as m0013 from './migrations/0013-reports.js';
import * as m0014 from './migrations/0014-mta-sts.js';
import * as m0015 from './migrations/0015-destinations.js';
import * as m0016 from './migrations/0016-return-path.js';
import * as m0017 from './migrations/0017-nodes.js';
import * as m0018 from './migrations/0018-job-runs.js';
import * as m0019 from './migrations/0019-budgets.js';
import * as m0020 from './migrations/0020-queue-fillfactor.js';
import * as m0021 from './migrations/0021-smtp-passed-clients.js';
import * as m0022 from './migrations/0022-suppression-environments.js';
import * as m0023 from './migrations/0023-report-batches.js';
import * as m0024 from './migrations/0024-node-in-flight.js';
import * as m0026 from './migrations/0026-inbound-retries.js';
import * as m0027 from './migrations/0027-smtp-credentials.js';
import * as m0028 from './migrations/0028-batch-idempotency.js';
import * as m0029 from './migrations/0029-suppression-expiry.js';
import * as m0030 from './migrations/0030-webhook-formats.js';
import * as m0031 from './migrations/0031-second-factor.js';
import * as m0032 from './migrations/0032-mta-sts-mode.js';
import * as m0033 from './migrations/0033-passkeys.js';
import * as m0034 from './migrations/0034-single-sign-on.js';
import * as m0035 from './migrations/0035-certificates.js';
import * as m0036 from './migrations/0036-inbound-tls.js';
import * as m0037 from './migrations/0037-warm-up.js';
import * as m0038 from './migrations/0038-destination-pace.js';
import * as m0039 from './migrations/0039-dkim-rotation.js';
import * as m0040 from './migrations/0040-message-checks.js';
import * as m0041 from './migrations/0041-usage-shards.js';
import * as m0042 from './migrations/0042-message-contents.js';

const migrations: Record<string, Migration> = {
  '0001-foundation': m0001,
  '0002-templates': m0002,
  '0003-messages': m0003,
  '0004-inbound': m0004,
  '0005-email': m0005,
  '0006-webhooks': m0006,
  '0007-connections': m0007,
  '0008-domain-capabilities': m0008,
  '0009-received-stamps': m0009,
  '0010-operators': m0010,
  '0011-message-stats': m0011,
  '0012-domain-drift': m0012,
  '0013-reports': m0013,
  '0014-mta-sts': m0014,
  '0015-destinations': m0015,
  '0016-return-path': m0016,
  '0017-nodes': m0017,
  '0018-job-runs': m0018,
  '0019-budgets': m0019,
  '0020-queue-fillfactor': m0020,
  '0021-smtp-passed-clients': m0021,
  '0022-suppression-environments': m0022,
  '0023-report-batches': m0023,
  '0024-node-in-flight': m0024,
  '0026-inbound-retries': m0026,
  '0027-smtp-credentials': m0027,
  '0028-batch-idempotency': m0028,
  '0029-suppression-expiry': m0029,
  '0030-webhook-formats': m0030,
  '0031-second-factor': m0031,
  '0032-mta-sts-mode': m0032,
  '0033-passkeys': m0033,
  '0034-single-sign-on': m0034,
  '0035-certificates': m0035,
  '0036-inbound-tls': m0036,
  '0037-warm-up': m0037,
  '0038-destination-pace': m0038,
  '0039-dkim-rotation': m0039,
  '0040-message-checks': m0040,
  '0041-usage-shards': m0041,
  '0042-message-contents': m0042,
};

const provider: MigrationProvider = { getMigrations: () => Promise.resolve(migrations) };

/** The migrations this build knows and the database has not applied (another node may be newer). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider });
  return (await migrator.getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/** Applies every pending migration; returns the names applied. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(`migration failed: ${JSON.stringify(error)}`);
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
