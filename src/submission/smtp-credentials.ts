// SMTP credentials: a user name and a secret that AUTH on the submission ports takes in place of an
// API key, so an application's SMTP settings hold something that can only submit mail. This file
// is the only one that reads or writes `smtp_credentials`.
//
// A credential belongs to one workspace and one environment (live or test, from the stored row,
// never from the secret's prefix) and authenticates as a send-only key of them: its principal has
// the `send` scope alone and its own id as `keyId`, so it draws on the `api-send` budget like one
// more key. The user name is generated (`smtp_` + 20 lowercase letters and digits: never a
// workspace slug, which has no underscore, nor `apikey`); the secret is `sp_live_`/`sp_test_` + 32
// random bytes in base62, shown once, and only its SHA-256 is stored (lib/bearer-secret.ts, as for
// API keys). Nothing is cached: AUTH happens once per connection, and a revocation holds at once on
// every node. The last use is written at most once a minute per credential.
import { randomBytes } from 'node:crypto';
import { DESCRIPTION_MAX } from '../contract/smtp-credential-schemas.js';
import type { SmtpCredentialsTable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { hashSecret, lastUseDue, mintSecret, secretMatches } from '../lib/bearer-secret.js';
import { invalidBody, notFound, type Issue } from '../lib/errors.js';
import type { Principal } from '../workspaces/index.js';
import type { Env } from '../contract/vocabulary.js';

export interface SmtpCredential {
  id: string;
  username: string;
  env: Env;
  livemode: boolean;
  description: string;
  createdAt: string;
  /** When an AUTH last succeeded with it, to the minute; null if never. */
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const USERNAME = /^smtp_[a-z0-9]{20}$/;
const SECRET = /^sp_(live|test)_[0-9A-Za-z]{20,64}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Whether an AUTH user name is an SMTP credential's (rather than `apikey` or a workspace slug). */
export const isCredentialUsername = (user: string): boolean => USERNAME.test(user.trim().toLowerCase());

/** Whether a password has the shape of an SMTP credential's secret. */
export const looksLikeCredentialSecret = (password: string): boolean => SECRET.test(password.trim());

function newUsername(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  while (out.length < 20) {
    for (const b of randomBytes(32)) if (b < 252 && out.length < 20) out += alphabet[b % 36];
  }
  return `smtp_${out}`;
}

function toCredential(row: Omit<SmtpCredentialsTable, 'secret_hash' | 'workspace_id'>): SmtpCredential {
  return {
    id: row.id,
    username: row.username,
    env: row.env,
    livemode: row.env === 'live',
    description: row.description,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}

const COLUMNS = ['id', 'username', 'env', 'description', 'created_at', 'last_used_at', 'revoked_at'] as const;

export interface SmtpCredentialStore {
  /** Creates a credential; the secret is returned this once. */
  create(workspace: { id: string }, input: { env: string; description?: string }): Promise<{ credential: SmtpCredential; secret: string }>;
  /** The workspace's credentials, newest first; with `env`, of that environment only. */
  list(workspaceId: string, env?: Env): Promise<SmtpCredential[]>;
  /** Revokes a credential (again: no change); with `owner`, only one of that workspace (and environment), else not found. */
  revoke(id: string, owner?: { workspaceId: string; env?: Env }): Promise<SmtpCredential>;
  /** The principal of a user name and secret, or null for an unknown user name, a wrong secret or a revoked credential. */
  authenticate(username: string, secret: string): Promise<Principal | null>;
}

export function createSmtpCredentialStore({ db, clock, ids }: Pick<Deps, 'db' | 'clock' | 'ids'>): SmtpCredentialStore {
  return {
    async create(workspace, { env, description = '' }) {
      const issues: Issue[] = [];
      if (env !== 'live' && env !== 'test') issues.push({ path: 'env', message: 'env must be live or test' });
      if (description.length > DESCRIPTION_MAX) {
        issues.push({ path: 'description', message: `description must be at most ${DESCRIPTION_MAX} characters` });
      } else if (CONTROL.test(description)) {
        issues.push({ path: 'description', message: 'description must not contain control characters' });
      }
      if (issues.length) throw invalidBody(issues);
      const secret = mintSecret(`sp_${env}_`);
      const row: SmtpCredentialsTable = {
        id: ids.publicId('smc'),
        workspace_id: workspace.id,
        env: env as Env,
        username: newUsername(),
        secret_hash: hashSecret(secret),
        description,
        created_at: clock.now().toISOString(),
        last_used_at: null,
        revoked_at: null,
      };
      await db.insertInto('smtp_credentials').values(row).execute();
      return { credential: toCredential(row), secret };
    },

    async list(workspaceId, env) {
      let q = db.selectFrom('smtp_credentials').select(COLUMNS).where('workspace_id', '=', workspaceId);
      if (env) q = q.where('env', '=', env);
      const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
      return rows.map(toCredential);
    },

    async revoke(id, owner) {
      const found = await db.selectFrom('smtp_credentials').select(['workspace_id', 'env']).where('id', '=', id).executeTakeFirst();
      if (!found || (owner && (found.workspace_id !== owner.workspaceId || (owner.env && found.env !== owner.env)))) {
        throw notFound(`SMTP credential ${id}`);
      }
      await db
        .updateTable('smtp_credentials')
        .set({ revoked_at: clock.now().toISOString() })
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .execute();
      const row = await db.selectFrom('smtp_credentials').select(COLUMNS).where('id', '=', id).executeTakeFirstOrThrow();
      return toCredential(row);
    },

    async authenticate(username, secret) {
      const name = username.trim().toLowerCase();
      if (!USERNAME.test(name) || !SECRET.test(secret)) return null;
      const row = await db
        .selectFrom('smtp_credentials')
        .innerJoin('workspaces', 'workspaces.id', 'smtp_credentials.workspace_id')
        .select([
          'smtp_credentials.id as credentialId',
          'smtp_credentials.env',
          'smtp_credentials.secret_hash',
          'smtp_credentials.revoked_at',
          'smtp_credentials.last_used_at',
          'workspaces.id as wsId',
          'workspaces.slug',
          'workspaces.name',
          'workspaces.plan',
        ])
        .where('smtp_credentials.username', '=', name)
        .executeTakeFirst();
      if (!row || row.revoked_at !== null || !secretMatches(secret, row.secret_hash)) return null;
      const now = clock.now().getTime();
      if (lastUseDue(row.last_used_at, now)) {
        await db
          .updateTable('smtp_credentials')
          .set({ last_used_at: new Date(now).toISOString() })
          .where('id', '=', row.credentialId)
          .execute();
      }
      return {
        keyId: row.credentialId,
        workspace: { id: row.wsId, slug: row.slug, name: row.name, plan: row.plan },
        env: row.env,
        livemode: row.env === 'live',
        scopes: ['send'],
      };
    },
  };
}
