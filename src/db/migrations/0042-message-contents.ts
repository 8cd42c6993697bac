// Frozen: written against Kysely<any> and never importing app code, so it means the same forever.
// A message's content and attachments move to a table of their own, written once at accept. The
// messages row is the queue entry and changes three or four times on its way out (claim, dispatch,
// outcome); SQLite rewrites a whole record when any column changes, so every change copied the
// content and attachments again (an 80 KiB PDF made each message cost ~600 KB of WAL). PostgreSQL
// moved large values out of line already, but a 5 KiB body stayed in the row and was copied too.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('message_contents')
    .addColumn('message_id', 'text', (c) => c.primaryKey())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('attachments', 'text', (c) => c.notNull())
    .execute();
  await sql`INSERT INTO message_contents (message_id, content, attachments) SELECT id, content, attachments FROM messages`.execute(db);
  await db.schema.alterTable('messages').dropColumn('content').execute();
  await db.schema.alterTable('messages').dropColumn('attachments').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('messages')
    .addColumn('content', 'text', (c) => c.notNull().defaultTo('{}'))
    .execute();
  await db.schema
    .alterTable('messages')
    .addColumn('attachments', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await sql`UPDATE messages SET
      content = (SELECT c.content FROM message_contents c WHERE c.message_id = messages.id),
      attachments = (SELECT c.attachments FROM message_contents c WHERE c.message_id = messages.id)
    WHERE id IN (SELECT message_id FROM message_contents)`.execute(db);
  await db.schema.dropTable('message_contents').execute();
}
