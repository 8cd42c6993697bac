// Inbound addresses: a local part on the workspace's shared domain or on one of its verified custom
// domains. `*` is the catch-all. Reserved local parts (RFC 2142 role names and the like) cannot be
// created as their own address; mail to them reaches the catch-all only.
import { flag, type InboundAddressesTable, isSet, isUniqueViolation } from '../db/index.js';
import type { Deps } from '../deps.js';
import type { DomainStore } from '../domains/index.js';
import { AppError, invalidBody, notFound, type Issue } from '../lib/errors.js';
import { randomBase62 } from '../lib/ids.js';

export const RESERVED_LOCAL_PARTS = new Set([
  'postmaster',
  'abuse',
  'mailer-daemon',
  'hostmaster',
  'webmaster',
  'noc',
  'security',
  'root',
  'usenet',
  'uucp',
]);

const LOCAL_PART = /^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$/;
// A bare address: something@domain, no display name, no spaces or angle brackets.
const EMAIL = /^[^\s@<>()",;:\\[\]]+@[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/i;

export interface InboundAddress {
  id: string;
  address: string;
  description: string;
  forwardTo: string | null;
  webhookEndpointId: string | null;
  domainId: string;
  active: boolean;
  livemode: boolean;
  createdAt: string;
}

export interface NewAddress {
  localPart?: string;
  description?: string;
  forwardTo?: string | null;
  webhookEndpointId?: string | null;
  domainId?: string;
  livemode?: boolean;
}

export type AddressRow = InboundAddressesTable;

function toInboundAddress(row: AddressRow): InboundAddress {
  return {
    id: row.public_id,
    address: row.address,
    description: row.description,
    forwardTo: row.forward_to,
    webhookEndpointId: row.webhook_endpoint_id,
    domainId: row.domain_id,
    active: isSet(row.active),
    livemode: isSet(row.livemode),
    createdAt: row.created_at,
  };
}

export interface AddressStore {
  create(workspace: { id: string; slug: string }, input: NewAddress): Promise<InboundAddress>;
  /** Addresses of one domain of the workspace (the shared domain when none is named), oldest first. */
  list(workspace: { id: string; slug: string }, domainId?: string): Promise<InboundAddress[]>;
  byPublicId(workspaceId: string, publicId: string): Promise<AddressRow>;
  /** Stops an address receiving (mail to it is refused as unknown); it stays listed, inactive. */
  deactivate(workspaceId: string, publicId: string): Promise<InboundAddress>;
}

export function createAddressStore({
  db,
  clock,
  ids,
  domains,
}: Pick<Deps, 'db' | 'clock' | 'ids'> & { domains: DomainStore }): AddressStore {
  return {
    async create(workspace, input) {
      const issues: Issue[] = [];
      let localPart = input.localPart?.toLowerCase();
      if (localPart === undefined) {
        localPart = `rcv-${randomBase62(10).toLowerCase()}`;
      } else if (localPart !== '*') {
        if (!LOCAL_PART.test(localPart)) {
          issues.push({
            path: 'localPart',
            message: 'localPart must be 1-64 of a-z, 0-9, period, underscore, hyphen, starting and ending alphanumeric',
          });
        } else if (RESERVED_LOCAL_PARTS.has(localPart)) {
          issues.push({ path: 'localPart', message: `${localPart} is reserved; it reaches the catch-all (*) only` });
        }
      }
      const forwardTo = input.forwardTo ?? null;
      if (forwardTo !== null) {
        if (forwardTo.length > 320 || !EMAIL.test(forwardTo)) {
          issues.push({ path: 'forwardTo', message: 'forwardTo must be an email address of at most 320 characters' });
        } else if (await domains.isServedDomain(forwardTo.slice(forwardTo.lastIndexOf('@') + 1))) {
          issues.push({ path: 'forwardTo', message: 'forwardTo cannot be an inbound address (mail loop)' });
        }
      }
      // A bound endpoint must be one of this workspace's, in the address's environment.
      const endpointId = input.webhookEndpointId ?? null;
      if (endpointId !== null) {
        const endpoint = await db
          .selectFrom('webhook_endpoints')
          .select(['livemode'])
          .where('public_id', '=', endpointId)
          .where('workspace_id', '=', workspace.id)
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
        if (!endpoint) {
          issues.push({
            path: 'webhookEndpointId',
            message: 'webhookEndpointId must be the whk_ id of a webhook endpoint of this workspace',
          });
        } else if (isSet(endpoint.livemode) !== (input.livemode !== false)) {
          issues.push({
            path: 'webhookEndpointId',
            message: "the webhook endpoint belongs to the other environment than the address's livemode",
          });
        }
      }
      let domainRow;
      if (input.domainId !== undefined) {
        domainRow = await domains.verifiedCustom(workspace.id, input.domainId);
        if (!domainRow) issues.push({ path: 'domainId', message: 'domainId must be a verified custom domain of this workspace' });
      }
      if (issues.length) throw invalidBody(issues);
      domainRow ??= await domains.ensureShared(workspace);

      const row: AddressRow = {
        id: ids.uuid(),
        public_id: ids.publicId('inb'),
        workspace_id: workspace.id,
        domain_id: domainRow.id,
        local_part: localPart,
        address: `${localPart}@${domainRow.domain}`,
        description: input.description ?? '',
        forward_to: forwardTo ? forwardTo.toLowerCase() : null,
        webhook_endpoint_id: input.webhookEndpointId ?? null,
        active: flag(true),
        livemode: flag(input.livemode !== false),
        created_at: clock.now().toISOString(),
        deleted_at: null,
      };
      try {
        await db.insertInto('inbound_addresses').values(row).execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw new AppError('already_exists', `${row.address} already exists`);
        throw err;
      }
      return toInboundAddress(row);
    },

    async list(workspace, domainId) {
      const domainRow = domainId
        ? await db
            .selectFrom('domains')
            .selectAll()
            .where('workspace_id', '=', workspace.id)
            .where('id', '=', domainId)
            .where('deleted_at', 'is', null)
            .executeTakeFirst()
        : await db
            .selectFrom('domains')
            .selectAll()
            .where('workspace_id', '=', workspace.id)
            .where('kind', '=', 'shared')
            .where('deleted_at', 'is', null)
            .executeTakeFirst();
      if (!domainRow) {
        if (domainId) throw notFound('domain');
        return [];
      }
      const rows = await db
        .selectFrom('inbound_addresses')
        .selectAll()
        .where('domain_id', '=', domainRow.id)
        .where('deleted_at', 'is', null)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map(toInboundAddress);
    },

    async byPublicId(workspaceId, publicId) {
      const row = await db
        .selectFrom('inbound_addresses')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('public_id', '=', publicId)
        .executeTakeFirst();
      if (!row) throw notFound('address');
      return row;
    },

    async deactivate(workspaceId, publicId) {
      const row = await db
        .selectFrom('inbound_addresses')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('public_id', '=', publicId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      if (!row) throw notFound('address');
      await db
        .updateTable('inbound_addresses')
        .set({ active: flag(false) })
        .where('id', '=', row.id)
        .execute();
      return toInboundAddress({ ...row, active: flag(false) });
    },
  };
}
