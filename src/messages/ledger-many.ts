// The ledger's compare-and-swap writes, many at once, on PostgreSQL. Each write to a message is a
// round trip, and a round trip costs the node and the server more than the update itself
// (docs/performance.md, "PostgreSQL cost per message"): the dispatcher's changes that arrive
// together (one group-commit batch, db/group-commit.ts) are written with one UPDATE per shape
// (the set of columns written and the guards), their rows and guards passed as one JSON
// parameter, instead of one UPDATE each. Each row keeps its own guards, so the statement applies
// to exactly the rows one UPDATE each would have; RETURNING says which.
//
// Accepted messages that commit together are inserted the same way, with one INSERT.
//
// The oracle of each is its plain path: the same changes committed one after the other
// (test/messages/ledger-many.test.ts), the same sends accepted one after the other
// (test/outbound/accept-many.test.ts), over generated inputs.
import { type Insertable, sql, type Transaction } from 'kysely';
import type { Database, MessageContentsTable } from '../db/index.js';
import type { MessageRow } from './message.js';
import type { MessageStatus } from '../contract/messages.js';

/** One compare-and-swap of a message: its columns, written when its status (and lease, and empty column) are still as read. */
export interface Swap {
  id: string;
  expect: MessageStatus;
  lease: string | undefined;
  unsetColumn: 'opened_at' | 'clicked_at' | null;
  /** The columns written, each with a value (null at most). */
  columns: Record<string, unknown>;
}

/** Writes `swaps` (of distinct messages) with one statement per shape; whether each applied, in order. */
export async function swapMany(trx: Transaction<Database>, swaps: Swap[]): Promise<boolean[]> {
  const shapes = new Map<string, number[]>();
  swaps.forEach((s, i) => {
    const key = `${Object.keys(s.columns).join(',')}|${s.lease !== undefined}|${s.unsetColumn ?? ''}`;
    const places = shapes.get(key);
    if (places) places.push(i);
    else shapes.set(key, [i]);
  });
  const applied = swaps.map(() => false);
  for (const places of shapes.values()) {
    const first = swaps[places[0]];
    const names = Object.keys(first.columns);
    const rows = places.map((i) => ({ ref: swaps[i].id, expect: swaps[i].expect, lease: swaps[i].lease ?? null, patch: swaps[i].columns }));
    // json_populate_record types each value as its column, as a bound parameter would be.
    const written = await sql<{ id: string }>`
      update messages as m set ${sql.join(names.map((n) => sql`${sql.ref(n)} = ${sql.ref(`p.${n}`)}`))}
      from json_to_recordset(${JSON.stringify(rows)}::json) as v(ref text, expect text, lease text, patch json),
        lateral json_populate_record(null::messages, v.patch) as p
      where m.id = v.ref and m.status = v.expect
        ${first.lease !== undefined ? sql`and m.locked_by = v.lease` : sql``}
        ${first.unsetColumn ? sql`and ${sql.ref(`m.${first.unsetColumn}`)} is null` : sql``}
      returning m.id`.execute(trx);
    const ids = new Set(written.rows.map((r) => r.id));
    for (const i of places) applied[i] = ids.has(swaps[i].id);
  }
  return applied;
}

/** Inserts accepted messages (PostgreSQL), in order, and what they say: one statement, each table's rows as one JSON parameter. */
export async function insertMany(
  trx: Transaction<Database>,
  rows: MessageRow[],
  contents: Insertable<MessageContentsTable>[],
): Promise<void> {
  const columns = Object.keys(rows[0]).filter((c) => c !== 'seq');
  const values = rows.map(({ seq: _seq, ...row }) => row);
  const list = sql.join(columns.map((c) => sql.ref(c)));
  // WITH ORDINALITY and its ORDER BY give the rows their seq in the order accepted; what they say
  // goes in by the same statement (a data-modifying CTE), one round trip for both.
  await sql`
    with m as (
      insert into messages (${list})
      select ${sql.join(columns.map((c) => sql.ref(`r.${c}`)))}
      from json_populate_recordset(null::messages, ${JSON.stringify(values)}::json) with ordinality as r
      order by r.ordinality)
    insert into message_contents (message_id, content, attachments)
    select r.message_id, r.content, r.attachments
    from json_populate_recordset(null::message_contents, ${JSON.stringify(contents)}::json) as r`.execute(trx);
}
