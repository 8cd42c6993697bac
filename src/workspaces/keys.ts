// API keys. The secret is `sk_live_`/`sk_test_` + 32 random bytes in base62, shown once; only its
// SHA-256 is stored (lib/bearer-secret.ts, shared with the SMTP credentials). The environment
// comes from the stored row, never from the prefix a client sends.
import type { ApiKey } from '../contract/dashboard.js';
import type { ApiKeysTable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { AppError, invalidBody, notFound } from '../lib/errors.js';
import { hashSecret, lastUseDue, mintSecret } from '../lib/bearer-secret.js';
import { parseScopes } from './scopes.js';
import type { Workspace } from './workspaces.js';
import { type Env, BOX_SCOPES, type Scope } from '../contract/vocabulary.js';

/** What a request is allowed to act as, once its key checks out. */
export interface Principal {
  keyId: string;
  workspace: { id: string; slug: string; name: string; plan: string };
  env: Env;
  livemode: boolean;
  scopes: Scope[] | null;
}

// Bearer tokens we could have issued: anything else is rejected before touching the database.
const SECRET_SHAPE = /^sk_(live|test)_[0-9A-Za-z]{20,64}$/;

export interface KeyStore {
  /**
   * Creates a key. A box scope (`cluster`) is granted only with `boxOwner` (the CLI, a dashboard
   * owner); asked for by anyone else it is refused (forbidden).
   */
  create(
    workspace: Workspace,
    input: { env: string; scopes?: string; name?: string },
    opts?: { boxOwner: boolean },
  ): Promise<{ key: ApiKey; secret: string }>;
  list(workspaceId: string): Promise<ApiKey[]>;
  /** Revokes a key; with `workspaceId`, only a key of that workspace (else not found). */
  revoke(id: string, workspaceId?: string): Promise<ApiKey>;
  /** The principal for a bearer secret, or null for an unknown, malformed or revoked one. */
  authenticate(secret: string): Promise<Principal | null>;
}

function toKey(row: Omit<ApiKeysTable, 'key_hash'>): ApiKey {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    env: row.env,
    prefix: row.prefix,
    scopes: row.scopes === null ? null : (row.scopes.split(',').filter(Boolean) as Scope[]),
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
  };
}

export function createKeyStore({ db, clock, ids, cacheTtlMs = 0 }: Pick<Deps, 'db' | 'clock' | 'ids'> & { cacheTtlMs?: number }): KeyStore {
  // Authenticated principals are cached briefly: the lookup is the most frequent query the daemon
  // makes. A key revoked by another process (the CLI, another node) stops working within the TTL;
  // one revoked through this process stops at once.
  const cache = new Map<string, { principal: Principal; until: number }>();
  return {
    async create(workspace, { env, scopes, name }, opts = { boxOwner: false }) {
      const issues = [];
      if (env !== 'live' && env !== 'test') issues.push({ path: 'env', message: 'env must be live or test' });
      const parsed = parseScopes(scopes);
      if (!parsed.ok) issues.push({ path: 'scopes', message: parsed.message });
      if (issues.length || !parsed.ok) throw invalidBody(issues);
      const boxScopes = (parsed.scopes ?? []).filter((s) => BOX_SCOPES.includes(s));
      if (boxScopes.length && !opts.boxOwner) {
        throw new AppError(
          'forbidden',
          `only a box owner may grant the ${boxScopes.join(', ')} scope (postern key create, or an owner in the dashboard)`,
          {
            scope: boxScopes[0],
          },
        );
      }
      const secret = mintSecret(`sk_${env}_`);
      const row = {
        id: ids.uuid(),
        workspace_id: workspace.id,
        name: name ?? `${env} key`,
        env: env as Env,
        key_hash: hashSecret(secret),
        prefix: secret.slice(0, 12),
        scopes: parsed.scopes === null ? null : parsed.scopes.join(','),
        created_at: clock.now().toISOString(),
        revoked_at: null,
        last_used_at: null,
      };
      await db.insertInto('api_keys').values(row).execute();
      return { key: toKey(row), secret };
    },
    async list(workspaceId) {
      const rows = await db.selectFrom('api_keys').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at').execute();
      return rows.map(toKey);
    },
    async revoke(id, workspaceId) {
      cache.clear();
      const now = clock.now().toISOString();
      const row0 = await db.selectFrom('api_keys').select('workspace_id').where('id', '=', id).executeTakeFirst();
      if (!row0 || (workspaceId !== undefined && row0.workspace_id !== workspaceId)) throw notFound(`key ${id}`);
      await db.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
      const row = await db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) throw notFound(`key ${id}`);
      return toKey(row);
    },
    async authenticate(secret) {
      if (!SECRET_SHAPE.test(secret)) return null;
      const hash = hashSecret(secret);
      const now = clock.now().getTime();
      const hit = cache.get(hash);
      if (hit && hit.until > now) return hit.principal;
      const row = await db
        .selectFrom('api_keys')
        .innerJoin('workspaces', 'workspaces.id', 'api_keys.workspace_id')
        .select([
          'api_keys.id as keyId',
          'api_keys.env',
          'api_keys.scopes',
          'api_keys.revoked_at',
          'api_keys.last_used_at',
          'workspaces.id as wsId',
          'workspaces.slug',
          'workspaces.name',
          'workspaces.plan',
        ])
        .where('api_keys.key_hash', '=', hash)
        .executeTakeFirst();
      if (!row || row.revoked_at !== null) {
        cache.delete(hash);
        return null;
      }
      // Last use is kept to the minute, written on a cache miss: at most one write a minute per key.
      if (lastUseDue(row.last_used_at, now)) {
        void db
          .updateTable('api_keys')
          .set({ last_used_at: new Date(now).toISOString() })
          .where('id', '=', row.keyId)
          .execute()
          .catch(() => undefined);
      }
      const env = row.env;
      const principal: Principal = {
        keyId: row.keyId,
        workspace: { id: row.wsId, slug: row.slug, name: row.name, plan: row.plan },
        env,
        livemode: env === 'live',
        scopes: row.scopes === null ? null : (row.scopes.split(',').filter(Boolean) as Scope[]),
      };
      if (cacheTtlMs > 0) {
        if (cache.size >= 10_000) cache.clear();
        cache.set(hash, { principal, until: now + cacheTtlMs });
      }
      return principal;
    },
  };
}
