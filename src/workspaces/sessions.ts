// Dashboard sessions: a random token in an HttpOnly cookie, only its SHA-256 in the database (so
// every node of a cluster serves it), an idle and an absolute expiry, and a CSRF token the page
// echoes in a header on every state-changing request. Logins are throttled per account and per
// client address by the failures of the last window, also kept in the database; a wrong second
// factor counts as a failure like a wrong password.
import { randomBytes } from 'node:crypto';
import type { OperatorSessionsTable, SignInMethod } from '../db/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../lib/errors.js';
import { bytesToBase62 } from '../lib/ids.js';
import { sha256, type Operator, type OperatorStore } from './operators.js';
import type { SecondFactorProof, SecondFactors } from './second-factor.js';
import type { Env } from '../contract/vocabulary.js';

export interface Session {
  /** The stored key of the session (the token's hash); the token itself lives only in the cookie. */
  id: string;
  operator: Operator;
  csrfToken: string;
  workspaceId: string | null;
  env: Env;
  createdAt: string;
  expiresAt: string;
  /** How the operator signed in. */
  method: SignInMethod;
  /**
   * The box requires a second factor and this operator has none yet: the session may only set
   * one up (and log out) until it does.
   */
  mustSetUpSecondFactor: boolean;
}

export interface Client {
  ip: string;
  userAgent: string;
}

export interface SessionStore {
  /**
   * Checks the password, then the operator's second factor if it has one, under the throttle, and
   * opens a session; the token goes in the cookie.
   */
  login(email: string, password: string, client: Client, proof?: SecondFactorProof): Promise<{ token: string; session: Session }>;
  /** Opens a session for an operator who proved itself another way (the setup link, a passkey). */
  open(operator: Operator, client: Client, method?: SignInMethod): Promise<{ token: string; session: Session }>;
  /** The live session of a cookie token, or null (unknown, idle too long, past its absolute expiry). */
  resolve(token: string): Promise<Session | null>;
  /** Chooses the workspace and environment the dashboard acts on. */
  select(session: Session, workspaceId: string, env: Env): Promise<Session>;
  end(session: Session): Promise<void>;
}

// Touching last_seen_at on every request would make each page view a write; once a minute keeps
// the idle expiry within a minute of the truth.
const TOUCH_EVERY_MS = 60_000;

export function createSessionStore(
  deps: Pick<Deps, 'db' | 'clock' | 'config'> & { operators: OperatorStore; factors: SecondFactors },
): SessionStore {
  const { db, clock, config, operators, factors } = deps;
  const limits = config.dashboard;

  async function recentFailures(subject: string, since: string): Promise<{ n: number; oldest: string | null }> {
    const r = await db
      .selectFrom('login_failures')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('at').as('oldest')])
      .where('subject', '=', subject)
      .where('at', '>', since)
      .executeTakeFirstOrThrow();
    return { n: Number(r.n), oldest: r.oldest ?? null };
  }

  function refuse(what: string, oldest: string | null, now: number): never {
    const retry = oldest ? Math.max(1, Math.ceil((Date.parse(oldest) + limits.loginFailureWindow - now) / 1000)) : 60;
    const minutes = Math.ceil(retry / 60);
    throw new AppError(
      'rate_limited',
      `too many failed logins ${what}; try again in ${minutes} minute${minutes === 1 ? '' : 's'}, or reset the password with postern operator reset-password`,
      {},
      retry,
    );
  }

  async function open(operator: Operator, client: Client, method: SignInMethod = 'password') {
    const token = bytesToBase62(randomBytes(32));
    const now = clock.now();
    const row: OperatorSessionsTable = {
      token_hash: sha256(token),
      operator_id: operator.id,
      csrf_token: bytesToBase62(randomBytes(24)),
      workspace_id: null,
      env: 'live',
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      expires_at: new Date(now.getTime() + limits.sessionMaxAge).toISOString(),
      ip: client.ip.slice(0, 64),
      user_agent: client.userAgent.slice(0, 256),
      method,
    };
    await db.insertInto('operator_sessions').values(row).execute();
    // Housekeeping rides on logins: expired sessions and old failures go then.
    await db.deleteFrom('operator_sessions').where('expires_at', '<=', now.toISOString()).execute();
    return { token, session: toSession(row, operator, await mustSetUp(operator, method)) };
  }

  /** Whether the box's rule leaves this operator only the setting up of a second factor. */
  async function mustSetUp(operator: Operator, method: SignInMethod): Promise<boolean> {
    if (method !== 'password' || !(await factors.required())) return false;
    return !(await factors.enrolled(operator.id));
  }

  function toSession(row: OperatorSessionsTable, operator: Operator, mustSetUpSecondFactor: boolean): Session {
    return {
      id: row.token_hash,
      operator,
      csrfToken: row.csrf_token,
      workspaceId: row.workspace_id,
      env: row.env,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      method: row.method,
      mustSetUpSecondFactor,
    };
  }

  return {
    async login(email, password, client, proof = {}) {
      const now = clock.now().getTime();
      const since = new Date(now - limits.loginFailureWindow).toISOString();
      const account = `account:${String(email).trim().toLowerCase().slice(0, 254)}`;
      const address = `address:${client.ip}`;
      const [byAccount, byAddress] = await Promise.all([recentFailures(account, since), recentFailures(address, since)]);
      if (byAccount.n >= limits.loginFailuresPerAccount) refuse('for this account', byAccount.oldest, now);
      if (byAddress.n >= limits.loginFailuresPerAddress) refuse('from your address', byAddress.oldest, now);
      const failed = async () => {
        const at = clock.now().toISOString();
        await db
          .insertInto('login_failures')
          .values([
            { subject: account, at },
            { subject: address, at },
          ])
          .execute();
        // Only the dashboard's own subjects: SMTP submission keeps its failures here too, on a
        // window of its own (submission/throttle.ts).
        await db.deleteFrom('login_failures').where('subject', 'not like', 'smtp-%').where('at', '<=', since).execute();
      };
      const operator = await operators.verify(email, password);
      if (!operator) {
        await failed();
        throw new AppError('unauthorized', 'wrong email or password');
      }
      let method: SignInMethod;
      try {
        method = await factors.check(operator.id, proof);
      } catch (err) {
        // Asking for the factor is not a failure; a wrong one is, so codes cannot be guessed freely.
        if (proof.code || proof.recoveryCode) await failed();
        throw err;
      }
      return open(operator, client, method);
    },
    open,
    async resolve(token) {
      if (typeof token !== 'string' || !/^[0-9A-Za-z]{20,64}$/.test(token)) return null;
      const row = await db.selectFrom('operator_sessions').selectAll().where('token_hash', '=', sha256(token)).executeTakeFirst();
      if (!row) return null;
      const now = clock.now().getTime();
      if (Date.parse(row.expires_at) <= now || Date.parse(row.last_seen_at) + limits.sessionIdle <= now) {
        await db.deleteFrom('operator_sessions').where('token_hash', '=', row.token_hash).execute();
        return null;
      }
      let operator: Operator;
      try {
        operator = await operators.byId(row.operator_id);
      } catch {
        return null;
      }
      if (now - Date.parse(row.last_seen_at) >= TOUCH_EVERY_MS) {
        await db
          .updateTable('operator_sessions')
          .set({ last_seen_at: new Date(now).toISOString() })
          .where('token_hash', '=', row.token_hash)
          .execute();
      }
      // A grant withdrawn since the choice was made ends the choice, not the session.
      if (row.workspace_id && !operators.mayActOn(operator, row.workspace_id)) row.workspace_id = null;
      return toSession(row, operator, await mustSetUp(operator, row.method));
    },
    async select(session, workspaceId, env) {
      if (!operators.mayActOn(session.operator, workspaceId)) throw new AppError('forbidden', 'you are not a member of this workspace');
      await db.updateTable('operator_sessions').set({ workspace_id: workspaceId, env }).where('token_hash', '=', session.id).execute();
      return { ...session, workspaceId, env };
    },
    async end(session) {
      await db.deleteFrom('operator_sessions').where('token_hash', '=', session.id).execute();
    },
  };
}
