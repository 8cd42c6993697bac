// Templates and their versions. A template belongs to a workspace (both environments see it) and
// holds numbered versions 1, 2, 3…: published ones are immutable, and at most one unpublished draft
// exists, always the highest number. Saving a draft updates that draft in place, or opens the next
// number; discarding it frees the number again (a draft was never published, so no published
// number is ever reused). Content is checked when it is saved, so send time never meets a template
// that does not parse.
import { isUniqueViolation, queriesFor, type TemplatesTable, type TemplateVersionsTable } from '../db/index.js';
import { sql } from 'kysely';
import type { Deps } from '../deps.js';
import { AppError, invalidBody, notFound, type Issue } from '../lib/errors.js';
import { planLimits } from '../workspaces/index.js';
import { contentSchemas } from '../contract/channels.js';
import { SLUG_PATTERN, variablesSchema, type Variable } from '../contract/template-content.js';
import { checkTemplates, renderContent, type RenderResult } from './render.js';
import type { Channel, ChannelContent } from '../contract/channels.js';
import type { TemplateStatus } from '../contract/vocabulary.js';

export interface TemplateSummary {
  slug: string;
  channel: Channel;
  description: string;
  status: TemplateStatus;
  updatedAt: string;
}

export interface TemplateVersion {
  versionNumber: number;
  status: 'draft' | 'published';
  content: ChannelContent;
  variables: Variable[];
  createdAt: string;
  updatedAt: string;
  publishedAt: string | null;
}

export interface TemplateDetail extends TemplateSummary {
  createdAt: string;
  currentVersion: { versionNumber: number; variables: Variable[]; publishedAt: string; content: ChannelContent } | null;
  /** The unpublished draft's number and last save, when there is one. */
  draft: { versionNumber: number; updatedAt: string } | null;
}

/** What the send pipeline needs of a template to render one message. */
export interface ResolvedTemplate {
  slug: string;
  channel: Channel;
  versionNumber: number;
  /** The version's content as stored (JSON): the message row keeps it as it is. */
  contentJson: string;
}

export interface TemplateStore {
  list(workspaceId: string): Promise<TemplateSummary[]>;
  get(workspaceId: string, slug: string): Promise<TemplateDetail>;
  /** Creates a template without versions; 403 plan_limit past the plan's template count. */
  create(workspace: { id: string; plan: string }, input: { slug: string; channel: Channel; description?: string }): Promise<TemplateDetail>;
  update(workspaceId: string, slug: string, input: { description?: string; status?: TemplateStatus }): Promise<TemplateDetail>;
  /** Saves the draft from raw content (validated against the template's channel) and variables. */
  saveDraft(workspaceId: string, slug: string, input: { content: unknown; variables?: unknown }): Promise<TemplateVersion>;
  /** Makes the draft the current published version; 409 conflict when there is no draft. */
  publish(workspaceId: string, slug: string): Promise<TemplateVersion>;
  /** Discards the draft; 404 when there is none. */
  discardDraft(workspaceId: string, slug: string): Promise<void>;
  /** Every version, newest first. */
  versions(workspaceId: string, slug: string): Promise<TemplateVersion[]>;
  /** Renders the current published version (or `version`, draft included) without sending. */
  render(workspaceId: string, slug: string, input: { vars: Record<string, unknown>; version?: number }): Promise<RenderResult>;
  /**
   * The version a send uses: the pinned `version`, else the current published one in live mode and
   * the latest (draft included) in test mode. Unknown template, never-published template in live
   * mode, or an unknown pin: 422 invalid_body naming `template` or `version`.
   */
  resolveForSend(workspaceId: string, slug: string, opts: { livemode: boolean; version?: number }): Promise<ResolvedTemplate>;
}

type TemplateRow = TemplatesTable;

/** The draft changed under a save (published by a concurrent request); the save is retried. */
class DraftRace extends Error {}
type VersionRow = TemplateVersionsTable;

function toSummary(row: TemplateRow): TemplateSummary {
  return { slug: row.slug, channel: row.channel, description: row.description, status: row.status, updatedAt: row.updated_at };
}

function toVersion(row: VersionRow): TemplateVersion {
  return {
    versionNumber: Number(row.version_number),
    status: row.published_at ? 'published' : 'draft',
    content: JSON.parse(row.content) as ChannelContent,
    variables: JSON.parse(row.variables) as Variable[],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    publishedAt: row.published_at,
  };
}

const prefixed = (prefix: string, issues: { path: PropertyKey[]; message: string }[]): Issue[] =>
  issues.map((i) => ({ path: [prefix, ...i.path.map(String)].join('.'), message: i.message }));

/** Lowercases a slug; null when it cannot be a slug at all (so it names no template). */
export function normalizeSlug(slug: string): string | null {
  const s = slug.toLowerCase();
  return SLUG_PATTERN.test(s) ? s : null;
}

export function createTemplateStore({ config, db, clock, ids }: Pick<Deps, 'config' | 'db' | 'clock' | 'ids'>): TemplateStore {
  const now = () => clock.now().toISOString();

  async function findTemplate(workspaceId: string, slug: string): Promise<TemplateRow | undefined> {
    const s = normalizeSlug(slug);
    if (!s) return undefined;
    return db.selectFrom('templates').selectAll().where('workspace_id', '=', workspaceId).where('slug', '=', s).executeTakeFirst();
  }

  // What a send reads of its template: the template and the version it sends, in one statement
  // compiled once per shape (every template send runs it). The version is the one asked for, else
  // the current published one (live) or the newest, draft included (test).
  function forSendQuery(workspaceId: string, slug: string, opts: { livemode: boolean; version?: number }) {
    const which = opts.version !== undefined ? 'asked' : opts.livemode ? 'current' : 'newest';
    const params = opts.version !== undefined ? [opts.version, workspaceId, slug] : [workspaceId, slug];
    return queriesFor(db).compiled(`templates.forSend.${which}`, params, () =>
      db
        .selectFrom('templates as t')
        .leftJoin('template_versions as v', (join) => {
          const same = join.onRef('v.template_id', '=', 't.id');
          if (opts.version !== undefined) return same.on('v.version_number', '=', opts.version);
          if (opts.livemode) return same.onRef('v.version_number', '=', 't.current_version');
          return same.on(
            sql<boolean>`v.version_number = (select max(n.version_number) from template_versions n where n.template_id = t.id)`,
          );
        })
        .select(['t.slug', 't.channel', 't.status', 't.current_version', 'v.version_number', 'v.content', 'v.published_at'])
        .where('t.workspace_id', '=', workspaceId)
        .where('t.slug', '=', slug),
    );
  }

  async function templateOr404(workspaceId: string, slug: string): Promise<TemplateRow> {
    const row = await findTemplate(workspaceId, slug);
    if (!row) throw notFound(`template ${slug.toLowerCase()}`);
    return row;
  }

  const versionRow = (templateId: string, n: number) =>
    db.selectFrom('template_versions').selectAll().where('template_id', '=', templateId).where('version_number', '=', n).executeTakeFirst();

  const draftRow = (templateId: string) =>
    db
      .selectFrom('template_versions')
      .selectAll()
      .where('template_id', '=', templateId)
      .where('published_at', 'is', null)
      .executeTakeFirst();

  async function detail(row: TemplateRow): Promise<TemplateDetail> {
    const current = row.current_version === null ? undefined : await versionRow(row.id, Number(row.current_version));
    const draft = await draftRow(row.id);
    const cur = current ? toVersion(current) : null;
    return {
      ...toSummary(row),
      createdAt: row.created_at,
      currentVersion: cur
        ? { versionNumber: cur.versionNumber, variables: cur.variables, publishedAt: cur.publishedAt!, content: cur.content }
        : null,
      draft: draft ? { versionNumber: Number(draft.version_number), updatedAt: draft.updated_at } : null,
    };
  }

  const touch = (id: string, at: string) => db.updateTable('templates').set({ updated_at: at }).where('id', '=', id).execute();

  const store: TemplateStore = {
    async list(workspaceId) {
      const rows = await db.selectFrom('templates').selectAll().where('workspace_id', '=', workspaceId).orderBy('slug').execute();
      return rows.map(toSummary);
    },

    async get(workspaceId, slug) {
      return detail(await templateOr404(workspaceId, slug));
    },

    async create(workspace, input) {
      const slug = normalizeSlug(input.slug);
      if (!slug) throw invalidBody([{ path: 'slug', message: 'slug must be 1-64 characters of a-z, 0-9, - and _' }]);
      // The plan's template count (0: unlimited).
      const limit = planLimits(config, workspace.plan)?.templates ?? 0;
      if (limit > 0) {
        const r = await db
          .selectFrom('templates')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('workspace_id', '=', workspace.id)
          .executeTakeFirstOrThrow();
        if (Number(r.n) >= limit)
          throw new AppError('plan_limit', `the ${workspace.plan} plan holds at most ${limit} templates`, { limit });
      }
      const at = now();
      const row: TemplateRow = {
        id: ids.uuid(),
        workspace_id: workspace.id,
        slug,
        channel: input.channel,
        description: input.description ?? '',
        status: 'active',
        current_version: null,
        created_at: at,
        updated_at: at,
      };
      try {
        await db.insertInto('templates').values(row).execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw new AppError('already_exists', `template ${slug} already exists`);
        throw err;
      }
      return detail(row);
    },

    async update(workspaceId, slug, input) {
      const row = await templateOr404(workspaceId, slug);
      const patch: Partial<TemplateRow> = { updated_at: now() };
      if (input.description !== undefined) patch.description = input.description;
      if (input.status !== undefined) patch.status = input.status;
      await db.updateTable('templates').set(patch).where('id', '=', row.id).execute();
      return detail({ ...row, ...patch });
    },

    async saveDraft(workspaceId, slug, input) {
      const tpl = await templateOr404(workspaceId, slug);
      const channel = tpl.channel;
      const issues: Issue[] = [];
      const content = contentSchemas[channel].safeParse(input.content);
      if (!content.success) issues.push(...prefixed('content', content.error.issues));
      const variables = variablesSchema.safeParse(input.variables ?? []);
      if (!variables.success) issues.push(...prefixed('variables', variables.error.issues));
      if (content.success) issues.push(...checkTemplates(channel, content.data as unknown as Record<string, unknown>));
      if (issues.length) throw invalidBody(issues);
      const contentJson = JSON.stringify(content.data);
      const variablesJson = JSON.stringify(variables.data);

      // Two writers may race for the next number (PostgreSQL, several nodes): the unique
      // (template_id, version_number) makes one of them lose; it retries and finds the draft.
      for (let attempt = 0; ; attempt++) {
        try {
          return await db.transaction().execute(async (trx) => {
            const at = now();
            // Touch the template first: it takes the row's write lock (PostgreSQL) or the write
            // lock (SQLite), so concurrent saves of one template run one after another and each
            // sees the draft the previous one opened.
            await trx.updateTable('templates').set({ updated_at: at }).where('id', '=', tpl.id).execute();
            const draft = await trx
              .selectFrom('template_versions')
              .selectAll()
              .where('template_id', '=', tpl.id)
              .where('published_at', 'is', null)
              .executeTakeFirst();
            let row: VersionRow;
            if (draft) {
              row = { ...draft, content: contentJson, variables: variablesJson, updated_at: at };
              const r = await trx
                .updateTable('template_versions')
                .set({ content: contentJson, variables: variablesJson, updated_at: at })
                .where('id', '=', draft.id)
                .where('published_at', 'is', null)
                .executeTakeFirst();
              // Published meanwhile by another request: it is immutable now, so open the next number.
              if (Number(r.numUpdatedRows) !== 1) throw new DraftRace();
            } else {
              const top = await trx
                .selectFrom('template_versions')
                .select((eb) => eb.fn.max('version_number').as('n'))
                .where('template_id', '=', tpl.id)
                .executeTakeFirst();
              const next = Number(top?.n ?? 0) + 1;
              row = {
                id: ids.uuid(),
                template_id: tpl.id,
                version_number: next,
                content: contentJson,
                variables: variablesJson,
                created_at: at,
                updated_at: at,
                published_at: null,
              };
              await trx.insertInto('template_versions').values(row).execute();
            }
            return toVersion(row);
          });
        } catch (err) {
          if ((isUniqueViolation(err) || err instanceof DraftRace) && attempt < 3) continue;
          throw err;
        }
      }
    },

    async publish(workspaceId, slug) {
      const tpl = await templateOr404(workspaceId, slug);
      return db.transaction().execute(async (trx) => {
        const draft = await trx
          .selectFrom('template_versions')
          .selectAll()
          .where('template_id', '=', tpl.id)
          .where('published_at', 'is', null)
          .executeTakeFirst();
        if (!draft) throw new AppError('conflict', `template ${tpl.slug} has no draft to publish`);
        const at = now();
        const r = await trx
          .updateTable('template_versions')
          .set({ published_at: at, updated_at: at })
          .where('id', '=', draft.id)
          .where('published_at', 'is', null)
          .executeTakeFirst();
        if (Number(r.numUpdatedRows) !== 1) throw new AppError('conflict', `template ${tpl.slug} has no draft to publish`);
        await trx
          .updateTable('templates')
          .set({ current_version: draft.version_number, updated_at: at })
          .where('id', '=', tpl.id)
          .execute();
        return toVersion({ ...draft, published_at: at, updated_at: at });
      });
    },

    async discardDraft(workspaceId, slug) {
      const tpl = await templateOr404(workspaceId, slug);
      const r = await db
        .deleteFrom('template_versions')
        .where('template_id', '=', tpl.id)
        .where('published_at', 'is', null)
        .executeTakeFirst();
      if (Number(r.numDeletedRows) === 0) throw notFound(`draft of template ${tpl.slug}`);
      await touch(tpl.id, now());
    },

    async versions(workspaceId, slug) {
      const tpl = await templateOr404(workspaceId, slug);
      const rows = await db
        .selectFrom('template_versions')
        .selectAll()
        .where('template_id', '=', tpl.id)
        .orderBy('version_number', 'desc')
        .execute();
      return rows.map(toVersion);
    },

    async render(workspaceId, slug, input) {
      const tpl = await templateOr404(workspaceId, slug);
      let row: VersionRow | undefined;
      if (input.version !== undefined) {
        row = await versionRow(tpl.id, input.version);
        if (!row) throw invalidBody([{ path: 'version', message: `template ${tpl.slug} has no version ${input.version}` }]);
      } else {
        if (tpl.current_version === null) {
          throw invalidBody([
            { path: 'template', message: `template ${tpl.slug} has never been published; publish it, or pass version to render a draft` },
          ]);
        }
        row = await versionRow(tpl.id, Number(tpl.current_version));
      }
      const v = toVersion(row!);
      return renderContent(tpl.channel, v.content, input.vars);
    },

    async resolveForSend(workspaceId, slug, opts) {
      const s = normalizeSlug(slug);
      const found = s ? (await db.executeQuery(forSendQuery(workspaceId, s, opts))).rows[0] : undefined;
      if (!found) throw invalidBody([{ path: 'template', message: `no template ${slug.toLowerCase()} in this workspace` }]);
      if (found.status === 'archived') throw invalidBody([{ path: 'template', message: `template ${found.slug} is archived` }]);
      if (opts.version !== undefined) {
        if (found.version_number === null) {
          throw invalidBody([{ path: 'version', message: `template ${found.slug} has no version ${opts.version}` }]);
        }
        if (opts.livemode && !found.published_at) {
          throw invalidBody([
            {
              path: 'version',
              message: `version ${opts.version} of template ${found.slug} is an unpublished draft; live mode sends published versions only`,
            },
          ]);
        }
      } else if (opts.livemode && found.current_version === null) {
        throw invalidBody([
          { path: 'template', message: `template ${found.slug} has never been published; live mode sends published versions only` },
        ]);
      } else if (found.version_number === null) {
        throw invalidBody([{ path: 'template', message: `template ${found.slug} has no versions yet; save a draft first` }]);
      }
      return {
        slug: found.slug,
        channel: found.channel,
        versionNumber: Number(found.version_number),
        contentJson: found.content!,
      };
    },
  };
  return store;
}
