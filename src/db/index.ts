// Storage: Kysely over SQLite or PostgreSQL, the migrations and row types, group commit and backups.
// This is the area's public face: the rest of the daemon imports only what it names (the `areas-
// through-their-face` rule).
export { backupSqlite, restoreSqlite } from './backup.js';
export { queriesFor } from './compiled-queries.js';
export {
  containsText,
  type DatabaseHandle,
  type DatabaseTarget,
  type Db,
  type Dialect,
  escapeLike,
  ilike,
  inList,
  isDatabaseUnavailable,
  isUniqueViolation,
  openDatabase,
  pgLib,
} from './database.js';
export { type BatchCommitter, type BulkKind, createWriteBatcher } from './group-commit.js';
export { type HeldLock, holdExclusive, LockBusyError } from './holder-lock.js';
export { databaseFailure, describeDatabase } from './open-failure.js';
export { readsTogether } from './reads-together.js';
export {
  type ApiKeysTable,
  type AuditLogTable,
  type Database,
  type DkimAlgorithm,
  type DkimKeysTable,
  type DomainsTable,
  type EventsTable,
  flag,
  type Flag,
  type ForwardStatus,
  type InboundAddressesTable,
  isSet,
  type MessageContentsTable,
  type MessagesTable,
  type OperatorRole,
  type OperatorSessionsTable,
  type OperatorsTable,
  type ProviderConnectionsTable,
  type ReceivedMessagesTable,
  type ReceivedStatus,
  type RecipientKind,
  type RecipientStatus,
  type SignInMethod,
  type SmtpCredentialsTable,
  type SuppressionsTable,
  type TemplatesTable,
  type TemplateVersionsTable,
  type WebhookAttemptsTable,
  type WebhookDeliveriesTable,
  type WebhookEndpointsTable,
  type WorkspacesTable,
} from './schema.js';
