// Operators: the people who run the appliance from the dashboard, apart from API keys. An owner
// acts on every workspace and manages operators; a member acts on the workspaces granted to it.
// Passwords are hashed with scrypt (memory-hard, from node:crypto); only the hash is stored.
import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { OperatorRole, OperatorsTable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { AppError, invalidBody, notFound, type Issue } from '../lib/errors.js';
import { bytesToBase62 } from '../lib/ids.js';

export interface Operator {
  id: string;
  email: string;
  role: OperatorRole;
  /** The workspace ids a member may act on; every workspace for an owner (listed as []). */
  workspaces: string[];
  createdAt: string;
}

// 2^15 × 8 × 128 bytes = 32 MiB per hash, about 100 ms on one core: OWASP's scrypt floor is 2^17
// at r=8 for 128 MiB; this halves memory twice to keep a login burst from exhausting a small box,
// and the login throttle bounds the guesses.
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keyLength: 32 };
const MIN_PASSWORD = 10;
const MAX_PASSWORD = 1024;
const EMAIL = /^[^\s@<>()",;]{1,64}@[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;

function scrypt(password: string, salt: Buffer, params: { N: number; r: number; p: number; keyLength: number }): Promise<Buffer> {
  const options: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) => {
    scryptCb(password, salt, params.keyLength, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), key.toString('base64')].join('$');
}

async function checkPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await scrypt(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p), keyLength: expected.length });
  return timingSafeEqual(key, expected);
}

/** The problems with a new password, for the envelope's issues. */
function passwordIssues(password: unknown, path = 'password'): Issue[] {
  if (typeof password !== 'string' || password.length < MIN_PASSWORD) {
    return [{ path, message: `password must be at least ${MIN_PASSWORD} characters` }];
  }
  if (password.length > MAX_PASSWORD) return [{ path, message: `password must be at most ${MAX_PASSWORD} characters` }];
  return [];
}

function normalEmail(email: unknown): string | null {
  if (typeof email !== 'string') return null;
  const e = email.trim().toLowerCase();
  return EMAIL.test(e) && e.length <= 254 ? e : null;
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export interface OperatorStore {
  create(input: { email: string; password: string; role?: string; workspaces?: string[] }): Promise<Operator>;
  list(): Promise<Operator[]>;
  byId(id: string): Promise<Operator>;
  byEmail(email: string): Promise<Operator>;
  count(): Promise<number>;
  /** Sets a new password and ends every session of the operator. */
  resetPassword(email: string, password: string): Promise<Operator>;
  /** Changes role and workspace grants; the last owner cannot be made a member. */
  setAccess(id: string, access: { role?: string; workspaces?: string[] }): Promise<Operator>;
  /** Removes an operator and its sessions; the last owner cannot be removed. */
  remove(email: string): Promise<Operator>;
  /** The operator whose password this is, or null; takes as long for an unknown email. */
  verify(email: string, password: string): Promise<Operator | null>;
  /** May this operator act on the workspace? */
  mayActOn(operator: Operator, workspaceId: string): boolean;
  /** A one-time setup link's token, made only while there is no operator and no unused link is valid; else null. */
  issueSetupToken(): Promise<string | null>;
  /** Uses a setup token to create the first owner. */
  completeSetup(token: string, input: { email: string; password: string }): Promise<Operator>;
}

export function createOperatorStore({ db, clock, ids, config }: Pick<Deps, 'db' | 'clock' | 'ids' | 'config'>): OperatorStore {
  // Checked against when the email is unknown, so a wrong email costs what a wrong password does.
  const decoy = hashPassword(randomBytes(16).toString('hex'));

  async function grants(operatorIds: string[]): Promise<Map<string, string[]>> {
    const map = new Map<string, string[]>();
    if (operatorIds.length === 0) return map;
    const rows = await db.selectFrom('operator_workspaces').selectAll().where('operator_id', 'in', operatorIds).execute();
    for (const r of rows) map.set(r.operator_id, [...(map.get(r.operator_id) ?? []), r.workspace_id]);
    return map;
  }

  function toOperator(row: OperatorsTable, workspaces: string[]): Operator {
    return {
      id: row.id,
      email: row.email,
      role: row.role,
      workspaces: row.role === 'owner' ? [] : workspaces.sort(),
      createdAt: row.created_at,
    };
  }

  async function load(row: OperatorsTable | undefined, what: string): Promise<Operator> {
    if (!row) throw notFound(what);
    return toOperator(row, (await grants([row.id])).get(row.id) ?? []);
  }

  async function checkWorkspaces(workspaces: unknown, issues: Issue[]): Promise<string[]> {
    if (workspaces === undefined) return [];
    if (!Array.isArray(workspaces) || !workspaces.every((w) => typeof w === 'string')) {
      issues.push({ path: 'workspaces', message: 'workspaces must be a list of workspace ids or slugs' });
      return [];
    }
    const out: string[] = [];
    for (const w of workspaces) {
      const row = await db
        .selectFrom('workspaces')
        .select('id')
        .where((eb) => eb.or([eb('id', '=', w), eb('slug', '=', w.toLowerCase())]))
        .executeTakeFirst();
      if (!row) issues.push({ path: 'workspaces', message: `no workspace ${w}` });
      else if (!out.includes(row.id)) out.push(row.id);
    }
    return out;
  }

  function checkRole(role: unknown, issues: Issue[]): OperatorRole {
    if (role === undefined) return 'member';
    if (role !== 'owner' && role !== 'member') issues.push({ path: 'role', message: 'role must be owner or member' });
    return role as OperatorRole;
  }

  async function owners(): Promise<number> {
    const r = await db
      .selectFrom('operators')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  const store: OperatorStore = {
    async create({ email, password, role, workspaces }) {
      const issues: Issue[] = [];
      const e = normalEmail(email);
      if (!e) issues.push({ path: 'email', message: 'email must be an email address' });
      issues.push(...passwordIssues(password));
      const r = checkRole(role, issues);
      const ws = await checkWorkspaces(workspaces, issues);
      if (issues.length || !e) throw invalidBody(issues);
      const now = clock.now().toISOString();
      const row: OperatorsTable = {
        id: ids.uuid(),
        email: e,
        password_hash: await hashPassword(password),
        role: r,
        created_at: now,
        password_changed_at: now,
      };
      await db.transaction().execute(async (trx) => {
        const taken = await trx.selectFrom('operators').select('id').where('email', '=', e).executeTakeFirst();
        if (taken) throw new AppError('already_exists', `an operator ${e} already exists`);
        await trx.insertInto('operators').values(row).execute();
        if (r === 'member' && ws.length) {
          await trx
            .insertInto('operator_workspaces')
            .values(ws.map((w) => ({ operator_id: row.id, workspace_id: w })))
            .execute();
        }
      });
      return toOperator(row, ws);
    },
    async list() {
      const rows = await db.selectFrom('operators').selectAll().orderBy('created_at').orderBy('id').execute();
      const g = await grants(rows.map((r) => r.id));
      return rows.map((r) => toOperator(r, g.get(r.id) ?? []));
    },
    async byId(id) {
      return load(await db.selectFrom('operators').selectAll().where('id', '=', id).executeTakeFirst(), 'operator');
    },
    async byEmail(email) {
      const e = normalEmail(email) ?? String(email);
      return load(await db.selectFrom('operators').selectAll().where('email', '=', e).executeTakeFirst(), `operator ${e}`);
    },
    async count() {
      const r = await db
        .selectFrom('operators')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(r.n);
    },
    async resetPassword(email, password) {
      const issues = passwordIssues(password);
      if (issues.length) throw invalidBody(issues);
      const op = await store.byEmail(email);
      const hash = await hashPassword(password);
      await db.transaction().execute(async (trx) => {
        await trx
          .updateTable('operators')
          .set({ password_hash: hash, password_changed_at: clock.now().toISOString() })
          .where('id', '=', op.id)
          .execute();
        await trx.deleteFrom('operator_sessions').where('operator_id', '=', op.id).execute();
      });
      return op;
    },
    async setAccess(id, { role, workspaces }) {
      const op = await store.byId(id);
      const issues: Issue[] = [];
      const r = role === undefined ? op.role : checkRole(role, issues);
      const ws = workspaces === undefined ? op.workspaces : await checkWorkspaces(workspaces, issues);
      if (issues.length) throw invalidBody(issues);
      if (op.role === 'owner' && r !== 'owner' && (await owners()) <= 1) {
        throw new AppError('conflict', 'the last owner cannot become a member: make another operator owner first');
      }
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('operators').set({ role: r }).where('id', '=', id).execute();
        await trx.deleteFrom('operator_workspaces').where('operator_id', '=', id).execute();
        if (r === 'member' && ws.length) {
          await trx
            .insertInto('operator_workspaces')
            .values(ws.map((w) => ({ operator_id: id, workspace_id: w })))
            .execute();
        }
      });
      return store.byId(id);
    },
    async remove(email) {
      const op = await store.byEmail(email);
      if (op.role === 'owner' && (await owners()) <= 1) {
        throw new AppError('conflict', 'the last owner cannot be removed: make another operator owner first');
      }
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('operator_sessions').where('operator_id', '=', op.id).execute();
        await trx.deleteFrom('operator_workspaces').where('operator_id', '=', op.id).execute();
        await trx.deleteFrom('operator_recovery_codes').where('operator_id', '=', op.id).execute();
        await trx.deleteFrom('operator_totp').where('operator_id', '=', op.id).execute();
        await trx.deleteFrom('operator_passkeys').where('operator_id', '=', op.id).execute();
        await trx.deleteFrom('operators').where('id', '=', op.id).execute();
      });
      return op;
    },
    async verify(email, password) {
      const e = normalEmail(email);
      const row = e ? await db.selectFrom('operators').selectAll().where('email', '=', e).executeTakeFirst() : undefined;
      if (typeof password !== 'string' || password.length > MAX_PASSWORD) return null;
      if (!row) {
        await checkPassword(password, await decoy);
        return null;
      }
      if (!(await checkPassword(password, row.password_hash))) return null;
      return load(row, 'operator');
    },
    mayActOn(operator, workspaceId) {
      return operator.role === 'owner' || operator.workspaces.includes(workspaceId);
    },
    async issueSetupToken() {
      if ((await store.count()) > 0) return null;
      const now = clock.now();
      const live = await db
        .selectFrom('setup_tokens')
        .select('token_hash')
        .where('used_at', 'is', null)
        .where('expires_at', '>', now.toISOString())
        .executeTakeFirst();
      // The link is printed once: a restart within its hour does not print another.
      if (live) return null;
      const token = bytesToBase62(randomBytes(24));
      await db
        .insertInto('setup_tokens')
        .values({
          token_hash: sha256(token),
          created_at: now.toISOString(),
          expires_at: new Date(now.getTime() + config.dashboard.setupLinkTtl).toISOString(),
          used_at: null,
        })
        .execute();
      return token;
    },
    async completeSetup(token, { email, password }) {
      const now = clock.now().toISOString();
      const hash = sha256(String(token));
      // Claimed with a compare-and-swap, so two browsers racing on one link make one owner.
      const claimed = await db
        .updateTable('setup_tokens')
        .set({ used_at: now })
        .where('token_hash', '=', hash)
        .where('used_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      if (Number(claimed.numUpdatedRows) === 0 || (await store.count()) > 0) {
        throw new AppError('gone', 'this setup link is used or expired; create an operator with: postern operator create --email E');
      }
      try {
        return await store.create({ email, password, role: 'owner' });
      } catch (err) {
        // A typo in the form must not burn the link.
        await db.updateTable('setup_tokens').set({ used_at: null }).where('token_hash', '=', hash).execute();
        throw err;
      }
    },
  };
  return store;
}
