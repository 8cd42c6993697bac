// Provider connections: per workspace, environment and channel, at most one active. Secret
// settings are sealed with the SecretBox before they reach the database and are only opened for a
// transport (or a callback's signature check); the public view lists which secrets are set, never
// their values. A URL setting that resolves to a private address is refused when the connection is
// added, unless the channels' SSRF policy allows it (the transport checks again on every connection).
import { type Db, flag, isSet, isUniqueViolation, type ProviderConnectionsTable } from '../db/index.js';
import type { Clock } from '../lib/clock.js';
import type { DnsResolver } from '../lib/dns.js';
import { AppError, invalidBody, notFound, type Issue } from '../lib/errors.js';
import type { Ids } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';
import { urlProblem, type SsrfPolicy } from '../lib/ssrf.js';
import { checkSettings, kebab, type Connection, type ResolvedConnection } from './provider.js';
import { PROVIDERS, providerFor } from './registry.js';
import { CHANNELS, type Channel } from '../contract/channels.js';
import type { Env } from '../contract/vocabulary.js';

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
  const spec = providerFor(row.channel, row.provider);
  const secretNames = spec ? spec.settings.filter((s) => s.secret).map((s) => s.name) : [];
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    env: isSet(row.livemode) ? 'live' : 'test',
    channel: row.channel,
    provider: row.provider,
    name: row.name,
    settings,
    secrets: secretNames,
    createdAt: row.created_at,
    removedAt: row.deleted_at,
  };
}

export interface ConnectionStoreDeps {
  db: Db;
  clock: Clock;
  ids: Ids;
  box: SecretBox;
  dns: DnsResolver;
  /** The channels' SSRF policy, which URL settings must satisfy. */
  ssrf: SsrfPolicy;
}

/** Re-seals every connection's credentials from one secrets key to another (`postern secrets rotate`); returns how many. */
export async function resealConnectionSecrets(db: Db, from: SecretBox, to: SecretBox): Promise<number> {
  const rows = await db.selectFrom('provider_connections').select(['id', 'secrets']).execute();
  for (const row of rows) {
    await db
      .updateTable('provider_connections')
      .set({ secrets: to.seal(from.open(row.secrets)) })
      .where('id', '=', row.id)
      .execute();
  }
  return rows.length;
}

export function createConnectionStore({ db, clock, ids, box, dns, ssrf }: ConnectionStoreDeps): ConnectionStore {
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
      const spec = providerFor(input.channel, input.provider);
      if (!spec && CHANNELS.includes(input.channel as Channel)) {
        const known = PROVIDERS.filter((p) => p.channel === input.channel).map((p) => p.name);
        issues.push({ path: 'provider', message: `provider for ${input.channel} must be one of ${known.join(', ') || '(none)'}` });
      }
      if (input.name !== undefined && (input.name.length < 1 || input.name.length > 200))
        issues.push({ path: 'name', message: 'name must be 1-200 characters' });
      if (issues.length || !spec) throw invalidBody(issues);
      const checked = checkSettings(spec, input.values);
      if (checked.issues.length) throw invalidBody(checked.issues);
      for (const s of spec.settings.filter((x) => x.kind === 'url' && checked.values[x.name] !== undefined)) {
        const problem = await urlProblem(ssrf, dns, new URL(checked.values[s.name]));
        if (problem) issues.push({ path: s.name, message: `${kebab(s.name)}: ${problem}` });
      }
      if (issues.length) throw invalidBody(issues);

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
        livemode: flag(input.env === 'live'),
        channel: spec.channel,
        provider: spec.name,
        name: input.name ?? `${spec.name} ${input.env}`,
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
      if (opts.env) q = q.where('livemode', '=', flag(opts.env === 'live'));
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
        .where('livemode', '=', flag(livemode))
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

/** A connection as the API and the CLI show it: settings without secrets, secret names only. */
export function connectionView(c: Connection) {
  return {
    id: c.id,
    env: c.env,
    channel: c.channel,
    provider: c.provider,
    name: c.name,
    settings: c.settings,
    credentials: c.secrets.map((name) => ({ name, set: true })),
    createdAt: c.createdAt,
    ...(c.removedAt ? { removedAt: c.removedAt } : {}),
  };
}
