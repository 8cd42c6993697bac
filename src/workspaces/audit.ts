// The audit log: who did what, when, from where, to which workspace, and how it ended, for every
// action taken in the dashboard. Owners read it in the dashboard and with `postern audit list`.
import type { AuditEntry } from '../contract/dashboard.js';
import type { AuditLogTable } from '../db/index.js';
import type { Deps } from '../deps.js';

export interface AuditLog {
  record(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<void>;
  /** Newest first; `before` is the id of the last entry of the previous page. */
  list(query?: {
    limit?: number;
    before?: number;
    operator?: string;
    workspaceId?: string;
  }): Promise<{ data: AuditEntry[]; nextBefore: number | null }>;
}

function toEntry(row: AuditLogTable & { id: number }): AuditEntry {
  return {
    id: Number(row.id),
    at: row.at,
    operator: { id: row.operator_id, email: row.operator_email },
    action: row.action,
    target: row.target,
    workspaceId: row.workspace_id,
    env: row.env,
    ip: row.ip,
    outcome: row.outcome,
  };
}

export function createAuditLog({ db, clock }: Pick<Deps, 'db' | 'clock'>): AuditLog {
  return {
    async record(e) {
      await db
        .insertInto('audit_log')
        .values({
          at: clock.now().toISOString(),
          operator_id: e.operator.id,
          operator_email: e.operator.email,
          action: e.action.slice(0, 200),
          target: e.target.slice(0, 500),
          workspace_id: e.workspaceId,
          env: e.env,
          ip: e.ip.slice(0, 64),
          outcome: e.outcome.slice(0, 100),
        })
        .execute();
    },
    async list({ limit = 50, before, operator, workspaceId } = {}) {
      const n = Math.min(Math.max(1, Math.trunc(limit)), 500);
      let q = db
        .selectFrom('audit_log')
        .selectAll()
        .orderBy('id', 'desc')
        .limit(n + 1);
      if (before !== undefined) q = q.where('id', '<', before);
      if (operator) q = q.where('operator_email', '=', operator.toLowerCase());
      if (workspaceId) q = q.where('workspace_id', '=', workspaceId);
      const rows = (await q.execute()).map((r) => toEntry(r as AuditLogTable & { id: number }));
      const data = rows.slice(0, n);
      return { data, nextBefore: rows.length > n ? data[data.length - 1].id : null };
    },
  };
}
