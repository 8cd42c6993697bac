// Workspaces: the tenant boundary. Every row a client can see belongs to exactly one workspace.
import { isUniqueViolation, type WorkspacesTable } from '../db/index.js';
import type { Deps } from '../deps.js';
import { AppError, invalidBody, notFound } from '../lib/errors.js';
import { PLANS, type Plan } from '../contract/vocabulary.js';

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  createdAt: string;
}

// The slug is a DNS label of the shared inbound domain ({slug}.in.{shared}), hence these rules.
const SLUG = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function isWorkspaceSlug(slug: string): boolean {
  return SLUG.test(slug);
}

function toWorkspace(row: WorkspacesTable): Workspace {
  return { id: row.id, slug: row.slug, name: row.name, plan: row.plan, createdAt: row.created_at };
}

export interface WorkspaceStore {
  create(input: { slug: string; name: string; plan?: string }): Promise<Workspace>;
  list(): Promise<Workspace[]>;
  bySlug(slug: string): Promise<Workspace>;
  byId(id: string): Promise<Workspace>;
  count(): Promise<number>;
  /** Moves a workspace to another plan; its limits apply from the next request. */
  setPlan(id: string, plan: string): Promise<Workspace>;
}

export function createWorkspaceStore({ db, clock, ids }: Pick<Deps, 'db' | 'clock' | 'ids'>): WorkspaceStore {
  return {
    async create({ slug, name, plan = 'free' }) {
      const issues = [];
      const s = slug.toLowerCase();
      if (!isWorkspaceSlug(s))
        issues.push({ path: 'slug', message: 'slug must be 1-63 of a-z, 0-9 and -, starting and ending alphanumeric' });
      if (!name || name.length > 200) issues.push({ path: 'name', message: 'name must be 1-200 characters' });
      if (!PLANS.includes(plan as Plan)) issues.push({ path: 'plan', message: `plan must be one of ${PLANS.join(', ')}` });
      if (issues.length) throw invalidBody(issues);
      const row: WorkspacesTable = { id: ids.uuid(), slug: s, name, plan: plan as Plan, created_at: clock.now().toISOString() };
      try {
        await db.insertInto('workspaces').values(row).execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw new AppError('already_exists', `workspace ${s} already exists`);
        throw err;
      }
      return toWorkspace(row);
    },
    async list() {
      const rows = await db.selectFrom('workspaces').selectAll().orderBy('created_at').orderBy('id').execute();
      return rows.map(toWorkspace);
    },
    async bySlug(slug) {
      const row = await db.selectFrom('workspaces').selectAll().where('slug', '=', slug.toLowerCase()).executeTakeFirst();
      if (!row) throw notFound(`workspace ${slug}`);
      return toWorkspace(row);
    },
    async setPlan(id, plan) {
      if (!PLANS.includes(plan as Plan)) throw invalidBody([{ path: 'plan', message: `plan must be one of ${PLANS.join(', ')}` }]);
      const done = await db
        .updateTable('workspaces')
        .set({ plan: plan as Plan })
        .where('id', '=', id)
        .executeTakeFirst();
      if (Number(done.numUpdatedRows) === 0) throw notFound('workspace');
      return this.byId(id);
    },
    async byId(id) {
      const row = await db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) throw notFound('workspace');
      return toWorkspace(row);
    },
    async count() {
      const r = await db
        .selectFrom('workspaces')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(r.n);
    },
  };
}
