// The store worker thread: its own connection to the SQLite file (same pragmas: WAL,
// synchronous=FULL), running batches of storeMessages() requests, each batch one BEGIN IMMEDIATE …
// COMMIT. The commit's fsync blocks this thread, not the daemon's event loop, which goes on
// reading, verifying and parsing; what arrives meanwhile forms the next batch. A batch that fails
// is retried one request per transaction so one bad request cannot sink the others.
import { parentPort, workerData } from 'node:worker_threads';
import { sql } from 'kysely';
import { openSqliteConnection } from '../db/database.js';
import { storeMessages, type StoreRequest, type StoreResult } from './store.js';

export type StoreWorkerReply = { id: number; ok: true; value: StoreResult } | { id: number; ok: false; error: string };

const { db, close } = openSqliteConnection((workerData as { file: string }).file);

async function inTransaction<T>(fn: (trx: typeof db) => Promise<T>): Promise<T> {
  return db.connection().execute(async (conn) => {
    await sql`begin immediate`.execute(conn);
    try {
      const out = await fn(conn);
      await sql`commit`.execute(conn);
      return out;
    } catch (err) {
      await sql`rollback`.execute(conn).catch(() => {});
      throw err;
    }
  });
}

parentPort!.on('message', (msg: { batch?: { id: number; req: StoreRequest }[]; close?: true }) => {
  if (msg.close) {
    close();
    parentPort!.close();
    return;
  }
  const batch = msg.batch ?? [];
  void (async () => {
    let replies: StoreWorkerReply[];
    try {
      const values = await inTransaction((trx) =>
        storeMessages(
          trx,
          batch.map((item) => item.req),
        ),
      );
      replies = batch.map((item, i) => ({ id: item.id, ok: true, value: values[i] }));
    } catch {
      replies = [];
      for (const item of batch) {
        try {
          replies.push({ id: item.id, ok: true, value: (await inTransaction((trx) => storeMessages(trx, [item.req])))[0] });
        } catch (err) {
          replies.push({ id: item.id, ok: false, error: err instanceof Error ? err.message : String(err) });
        }
      }
    }
    parentPort!.postMessage(replies);
  })();
});
