// The few column shapes that SQLite and PostgreSQL spell differently, for migrations to share.
// Like the migrations, this file never imports app code and never changes meaning.
import type { ColumnDataType, ColumnDefinitionBuilder, Kysely } from 'kysely';

export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter.constructor.name === 'PostgresAdapter';
}

/** An auto-incrementing integer primary key: INTEGER PRIMARY KEY on SQLite, BIGSERIAL on PostgreSQL. */
export function serialPrimaryKey(db: Kysely<any>): [ColumnDataType, (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder] {
  return isPostgres(db) ? ['bigserial', (c) => c.primaryKey()] : ['integer', (c) => c.primaryKey().autoIncrement()];
}
