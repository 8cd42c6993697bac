// Per-recipient delivery state of an email message (to, cc and bcc each get a row). A retry reads
// it first and only attempts recipients that are still pending or deferred, so an address that
// already got a 250 is never sent the message twice by Postern's own doing. Rows are written once
// per attempt, after the remote answers (one upsert for all recipients of the attempt): a crash
// between the 250 and that write resends only the message that was in flight.
import type { Db, RecipientKind, RecipientStatus } from '../../db/index.js';
import { domainOf } from '../../domains/index.js';

export interface RecipientState {
  address: string;
  kind: RecipientKind;
  domain: string;
  status: RecipientStatus;
  attempts: number;
  response: string | null;
}

/**
 * The recorded state of each recipient in `list`; `pending` for those never attempted. `attempt` is
 * the dispatcher's attempt number: rows are only written by an attempt, and each attempt is counted
 * (committed) before it starts, so the first attempt has nothing to read and skips the query.
 */
export async function loadRecipients(
  db: Db,
  messageId: string,
  list: { address: string; kind: RecipientKind }[],
  attempt = Infinity,
): Promise<RecipientState[]> {
  const rows = attempt <= 1 ? [] : await db.selectFrom('email_recipients').selectAll().where('message_id', '=', messageId).execute();
  const byAddress = new Map(rows.map((r) => [r.address, r]));
  return list.map(({ address, kind }) => {
    const r = byAddress.get(address);
    return r
      ? { address, kind, domain: r.domain, status: r.status, attempts: r.attempts, response: r.response }
      : { address, kind, domain: domainOf(address), status: 'pending' as const, attempts: 0, response: null };
  });
}

/** Records the outcome of an attempt for the given recipients in one statement. */
export async function saveRecipients(db: Db, messageId: string, states: RecipientState[], now: string): Promise<void> {
  if (states.length === 0) return;
  await db
    .insertInto('email_recipients')
    .values(
      states.map((s) => ({
        message_id: messageId,
        address: s.address,
        kind: s.kind,
        domain: s.domain,
        status: s.status,
        attempts: s.attempts,
        response: s.response,
        updated_at: now,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['message_id', 'address']).doUpdateSet((eb) => ({
        status: eb.ref('excluded.status'),
        attempts: eb.ref('excluded.attempts'),
        response: eb.ref('excluded.response'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}
