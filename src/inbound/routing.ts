// Which recipients Postern accepts and where each one goes. Decided at RCPT TO (so refusals are
// 550 5.7.1 before any data is sent) and carried to DATA. A custom domain is served once its
// receiving side is verified (its MX confirmed), never before: Postern is never an open relay. The local part is matched lowercase with
// any +tag split off; an exact address beats the catch-all; reserved role names reach only the
// catch-all; a served domain with no match is stored as `dropped`.
import { flag } from '../db/index.js';
import type { Deps } from '../deps.js';
import { bounceDomainOf, domainReadCache, normalizeDomain, slugOfSharedDomain } from '../domains/index.js';

const VERP_LOCAL = /^bounces\+msg_[0-9a-z]+$/;
import { REPORT_LOCAL_PART } from '../reports/index.js';
import { RESERVED_LOCAL_PARTS, type AddressRow } from './addresses.js';

export type Route =
  | { kind: 'bounce'; rcpt: string }
  /** The report address (`reports@` the bounce domain): DMARC and TLS reports (reports/inbox.ts). */
  | { kind: 'report'; rcpt: string }
  | { kind: 'mailbox'; rcpt: string; workspaceId: string; plan: string; address: AddressRow | null; exact: boolean; plusTag: string };

export interface Router {
  /** null: the domain is not served (refuse with 550 5.7.1). */
  resolve(rcpt: string): Promise<Route | null>;
}

interface DomainTarget {
  workspaceId: string;
  plan: string;
  domainId: string | null;
}

// Which workspace and domain row a recipient domain maps to changes rarely, and every RCPT asks:
// answers go through the two-second cache of domain reads (domains/read-cache.ts). Addresses are
// always read fresh.
export function createRouter({ config, db, bus, clock }: Pick<Deps, 'config' | 'db' | 'clock'> & Partial<Pick<Deps, 'bus'>>): Router {
  const bounceDomain = bounceDomainOf(config);
  const targets = domainReadCache<DomainTarget | null>({ bus, clock });

  const lookupDomain = async (domain: string): Promise<DomainTarget | null> => {
    // A shared domain as stored: it keeps the form it was created with (`sharedInboundDomain` may
    // have changed since, as it did with the form {slug}.in.{sharedInboundDomain} in 0.2.0).
    const stored = await db
      .selectFrom('domains')
      .innerJoin('workspaces', 'workspaces.id', 'domains.workspace_id')
      .select(['domains.id', 'domains.workspace_id', 'workspaces.plan'])
      .where('domains.domain', '=', domain)
      .where('domains.kind', '=', 'shared')
      .where('domains.deleted_at', 'is', null)
      .executeTakeFirst();
    if (stored) return { workspaceId: stored.workspace_id, plan: stored.plan, domainId: stored.id };
    const slug = slugOfSharedDomain(domain, config.sharedInboundDomain);
    if (slug !== null) {
      const ws = await db.selectFrom('workspaces').select(['id', 'plan']).where('slug', '=', slug).executeTakeFirst();
      if (!ws) return null;
      const d = await db
        .selectFrom('domains')
        .select('id')
        .where('workspace_id', '=', ws.id)
        .where('kind', '=', 'shared')
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return { workspaceId: ws.id, plan: ws.plan, domainId: d?.id ?? null };
    }
    const d = await db
      .selectFrom('domains')
      .innerJoin('workspaces', 'workspaces.id', 'domains.workspace_id')
      .select(['domains.id', 'domains.workspace_id', 'workspaces.plan'])
      .where('domains.domain', '=', domain)
      .where('domains.kind', '=', 'custom')
      // Receiving is verified once the MX points here (domains/domains.ts), DKIM or not.
      .where('domains.status', '!=', 'failed')
      .where('domains.mx_verified_at', 'is not', null)
      .where('domains.deleted_at', 'is', null)
      .executeTakeFirst();
    return d ? { workspaceId: d.workspace_id, plan: d.plan, domainId: d.id } : null;
  };

  const target = (domain: string): Promise<DomainTarget | null> => targets(domain, () => lookupDomain(domain));

  // `bounces.<domain>` of a custom domain whose return path is in use (domains/domains.ts).
  const returnPaths = domainReadCache<boolean>({ bus, clock });
  const isReturnPath = (host: string): Promise<boolean> => returnPaths(host, () => returnPathConfirmed(host));
  const returnPathConfirmed = async (host: string): Promise<boolean> => {
    const row = await db
      .selectFrom('domains')
      .select('id')
      .where('domain', '=', host.slice('bounces.'.length))
      .where('kind', '=', 'custom')
      .where('status', '!=', 'failed')
      .where('deleted_at', 'is', null)
      .where('return_path_verified_at', 'is not', null)
      .executeTakeFirst();
    // Confirmed once is enough to take DSNs: a return path that drifted still gets the bounces of
    // mail sent while it was in use (new mail goes out on the shared bounce domain meanwhile).
    return !!row;
  };

  const findAddress = async (domainId: string, local: string): Promise<{ row: AddressRow | null; exact: boolean }> => {
    const rows = await db
      .selectFrom('inbound_addresses')
      .selectAll()
      .where('domain_id', '=', domainId)
      .where('local_part', 'in', RESERVED_LOCAL_PARTS.has(local) ? ['*'] : [local, '*'])
      .where('deleted_at', 'is', null)
      .where('active', '=', flag(true))
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
      if (domain === bounceDomain) return { kind: fullLocal === REPORT_LOCAL_PART ? 'report' : 'bounce', rcpt };
      // A custom domain's own return path takes the VERP addresses of its messages, nothing else.
      if (domain.startsWith('bounces.') && (await isReturnPath(domain)))
        return VERP_LOCAL.test(fullLocal) ? { kind: 'bounce', rcpt } : null;
      const plus = fullLocal.indexOf('+');
      const local = plus >= 0 ? fullLocal.slice(0, plus) : fullLocal;
      const plusTag = plus >= 0 ? fullLocal.slice(plus + 1) : '';

      const t = await target(domain);
      if (!t) return null;
      const { workspaceId, plan, domainId } = t;
      const match = domainId ? await findAddress(domainId, local) : { row: null, exact: false };
      return { kind: 'mailbox', rcpt, workspaceId, plan, address: match.row, exact: match.exact, plusTag };
    },
  };
}
