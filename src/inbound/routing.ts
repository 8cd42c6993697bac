// Which recipients Postern accepts and where each one goes. Decided at RCPT TO (so refusals are
// 550 5.7.1 before any data is sent) and carried to DATA. The local part is matched lowercase with
// any +tag split off; an exact address beats the catch-all; reserved role names reach only the
// catch-all; a served domain with no match is stored as `dropped`.
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { bounceDomainOf, normalizeDomain, slugOfSharedDomain } from '../domains/names.js';
import type { AddressRow } from './addresses.js';
import { RESERVED_LOCAL_PARTS } from './addresses.js';

export type Route =
  | { kind: 'bounce'; rcpt: string }
  | { kind: 'mailbox'; rcpt: string; workspaceId: string; plan: string; address: AddressRow | null; exact: boolean; plusTag: string };

export interface Router {
  /** null: the domain is not served (refuse with 550 5.7.1). */
  resolve(rcpt: string): Promise<Route | null>;
}

export function createRouter({ config, db }: { config: Config; db: Db }): Router {
  const bounceDomain = bounceDomainOf(config);

  const findAddress = async (domainId: string, local: string): Promise<{ row: AddressRow | null; exact: boolean }> => {
    const rows = await db
      .selectFrom('inbound_addresses')
      .selectAll()
      .where('domain_id', '=', domainId)
      .where('local_part', 'in', RESERVED_LOCAL_PARTS.has(local) ? ['*'] : [local, '*'])
      .where('deleted_at', 'is', null)
      .where('active', '=', 1)
      .execute();
    const exact = rows.find((r) => r.local_part === local);
    if (exact) return { row: exact, exact: true };
    return { row: rows.find((r) => r.local_part === '*') ?? null, exact: false };
  };

  return {
    async resolve(rcpt) {
      const at = rcpt.lastIndexOf('@');
      if (at <= 0) return null;
      const domain = normalizeDomain(rcpt.slice(at + 1));
      const fullLocal = rcpt.slice(0, at).toLowerCase();
      if (domain === bounceDomain) return { kind: 'bounce', rcpt };
      const plus = fullLocal.indexOf('+');
      const local = plus >= 0 ? fullLocal.slice(0, plus) : fullLocal;
      const plusTag = plus >= 0 ? fullLocal.slice(plus + 1) : '';

      const slug = slugOfSharedDomain(domain, config.sharedInboundDomain);
      let workspaceId: string;
      let plan: string;
      let domainId: string | null = null;
      if (slug !== null) {
        const ws = await db.selectFrom('workspaces').select(['id', 'plan']).where('slug', '=', slug).executeTakeFirst();
        if (!ws) return null;
        workspaceId = ws.id;
        plan = ws.plan;
        const d = await db.selectFrom('domains').select('id').where('workspace_id', '=', ws.id).where('kind', '=', 'shared').where('deleted_at', 'is', null).executeTakeFirst();
        domainId = d?.id ?? null;
      } else {
        const d = await db
          .selectFrom('domains')
          .innerJoin('workspaces', 'workspaces.id', 'domains.workspace_id')
          .select(['domains.id', 'domains.workspace_id', 'workspaces.plan'])
          .where('domains.domain', '=', domain)
          .where('domains.kind', '=', 'custom')
          .where('domains.status', '=', 'verified')
          .where('domains.deleted_at', 'is', null)
          .executeTakeFirst();
        if (!d) return null;
        workspaceId = d.workspace_id;
        plan = d.plan;
        domainId = d.id;
      }
      const match = domainId ? await findAddress(domainId, local) : { row: null, exact: false };
      return { kind: 'mailbox', rcpt, workspaceId, plan, address: match.row, exact: match.exact, plusTag };
    },
  };
}
