// Provider connections: per workspace, environment and channel, at most one active. Secret
// settings are sealed with the SecretBox before they reach the database and are only opened for a
// transport (or a callback's signature check); the public view lists which secrets are set, never
// their values.
import type { Db } from '../db/database.js';
import { isUniqueViolation } from '../db/database.js';
import type { ProviderConnectionsTable } from '../db/schema.js';
import type { Clock } from '../lib/clock.js';
import { AppError, invalidBody, notFound, type Issue } from '../lib/errors.js';
import type { Ids } from '../lib/ids.js';
import { CHANNELS, type Channel } from '../templates/render.js';
import { checkSettings, PROVIDERS, providerSpec } from './providers.js';
import type { SecretBox } from './secrets.js';

export type Env = 'live' | 'test';

/** A connection as anyone may see it. */
export interface Connection {
  id: string;
  workspaceId: string;
  env: Env;
  channel: Channel;
  provider: string;
  name: string;
  /** Settings that are not secret. */
  settings: Record<string, string>;
  /** Names of the secret settings that are set (values are never shown). */
  secrets: string[];
  createdAt: string;
  removedAt: string | null;
}

/** A connection with its credentials opened; for transports and callback checks only. */
export interface ResolvedConnection extends Connection {
  credentials: Record<string, string>;
}

export interface NewConnection {
  workspaceId: string;
  env: string;
  channel: string;
  provider: string;
  name?: string;
  values: Record<string, string>;
}

export interface ConnectionStore {
  add(input: NewConnection): Promise<Connection>;
  list(workspaceId: string, opts?: { env?: Env }): Promise<Connection[]>;
  remove(id: string): Promise<Connection>;
  /** The connection a live message of this channel goes through, or null when there is none. */
  active(workspaceId: string, livemode: boolean, channel: Channel): Promise<ResolvedConnection | null>;
  /** Any connection by id, removed ones included (callbacks for messages sent before removal). */
  resolve(id: string): Promise<ResolvedConnection | null>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function toConnection(row: ProviderConnectionsTable): Connection {
  const settings = JSON.parse(row.settings) as Record<string, string>;
  const spec = providerSpec(row.channel, row.provider);
  const secretNames = spec ? spec.settings.filter((s) => s.secret).map((s) => s.name) : [];
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    env: row.livemode ? 'live' : 'test',
    channel: row.channel as Channel,
    provider: row.provider,
    name: row.name,
    settings,
    secrets: secretNames,
    createdAt: row.created_at,
    removedAt: row.deleted_at,
  };
}

export function createConnectionStore({ db, clock, ids, box }: { db: Db; clock: Clock; ids: Ids; box: SecretBox }): ConnectionStore {
  const resolveRow = (row: ProviderConnectionsTable): ResolvedConnection => ({
    ...toConnection(row),
    credentials: JSON.parse(box.open(row.secrets)) as Record<string, string>,
  });

  return {
    async add(input) {
      const issues: Issue[] = [];
      if (input.env !== 'live' && input.env !== 'test') issues.push({ path: 'env', message: 'env must be live or test' });
      if (!CHANNELS.includes(input.channel as Channel))
        issues.push({ path: 'channel', message: `channel must be one of ${CHANNELS.join(', ')}` });
      const spec = providerSpec(input.channel, input.provider);
      if (!spec && CHANNELS.includes(input.channel as Channel)) {
        const known = PROVIDERS.filter((p) => p.channel === input.channel).map((p) => p.provider);
        issues.push({ path: 'provider', message: `provider for ${input.channel} must be one of ${known.join(', ') || '(none)'}` });
      }
      if (input.name !== undefined && (input.name.length < 1 || input.name.length > 200))
        issues.push({ path: 'name', message: 'name must be 1-200 characters' });
      if (issues.length || !spec) throw invalidBody(issues);
      const checked = checkSettings(spec, input.values);
      if (checked.issues.length) throw invalidBody(checked.issues);

      const settings: Record<string, string> = {};
      const secrets: Record<string, string> = {};
      for (const s of spec.settings) {
        const v = checked.values[s.name];
        if (v === undefined) continue;
        (s.secret ? secrets : settings)[s.name] = v;
      }
      const row: ProviderConnectionsTable = {
        id: ids.uuid(),
        workspace_id: input.workspaceId,
        livemode: input.env === 'live' ? 1 : 0,
        channel: spec.channel,
        provider: spec.provider,
        name: input.name ?? `${spec.provider} ${input.env}`,
        settings: JSON.stringify(settings),
        secrets: box.seal(JSON.stringify(secrets)),
        created_at: clock.now().toISOString(),
        deleted_at: null,
      };
      try {
        await db.insertInto('provider_connections').values(row).execute();
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new AppError('already_exists', `the workspace already has a ${spec.channel} connection for ${input.env}; remove it first`);
        }
        throw err;
      }
      return toConnection(row);
    },

    async list(workspaceId, opts = {}) {
      let q = db.selectFrom('provider_connections').selectAll().where('workspace_id', '=', workspaceId).where('deleted_at', 'is', null);
      if (opts.env) q = q.where('livemode', '=', opts.env === 'live' ? 1 : 0);
      const rows = await q.orderBy('created_at').orderBy('id').execute();
      return rows.map(toConnection);
    },

    async remove(id) {
      if (!UUID.test(id)) throw notFound('connection');
      const row = await db
        .selectFrom('provider_connections')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      if (!row) throw notFound('connection');
      const now = clock.now().toISOString();
      await db.updateTable('provider_connections').set({ deleted_at: now }).where('id', '=', id).execute();
      return toConnection({ ...row, deleted_at: now });
    },

    async active(workspaceId, livemode, channel) {
      const row = await db
        .selectFrom('provider_connections')
        .selectAll()
        .where('workspace_id', '=', workspaceId)
        .where('livemode', '=', livemode ? 1 : 0)
        .where('channel', '=', channel)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return row ? resolveRow(row) : null;
    },

    async resolve(id) {
      if (!UUID.test(id)) return null;
      const row = await db.selectFrom('provider_connections').selectAll().where('id', '=', id).executeTakeFirst();
      return row ? resolveRow(row) : null;
    },
  };
}
